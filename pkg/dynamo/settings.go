package dynamo

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/pricing"
)

// A firm's settings item: FIRM#<firm> / SETTINGS, outside every run's
// partition (and outside the stream's EVT# filter).
const skSettings = "SETTINGS"

func firmPK(firm string) string { return "FIRM#" + firm }

type settingsItem struct {
	PK                 string   `dynamodbav:"PK"`
	SK                 string   `dynamodbav:"SK"`
	FirmID             string   `dynamodbav:"firm_id"`
	SeparationOfDuties bool     `dynamodbav:"separation_of_duties"`
	Domains            []string `dynamodbav:"domains,omitempty"`
	// MonthlyBudgetUSD is the firm's monthly model budget, a decimal
	// string; absent: the deployment's default applies.
	MonthlyBudgetUSD string `dynamodbav:"monthly_budget_usd,omitempty"`
	// RetentionDays is the firm's default retention; absent: kept.
	RetentionDays *int   `dynamodbav:"retention_days,omitempty"`
	UpdatedAt     string `dynamodbav:"updated_at"`
}

// GetFirmSettings reads a firm's settings (consistently); a firm that saved
// none gets warrant.DefaultFirmSettings.
func (s *Store) GetFirmSettings(ctx context.Context, firm string) (warrant.FirmSettings, error) {
	if !idsOK(firm) {
		return warrant.FirmSettings{}, fail(warrant.ErrNotFound, nil, "firm %q", firm)
	}
	m, err := s.getItem(ctx, firmPK(firm), skSettings)
	if err != nil {
		return warrant.FirmSettings{}, wrap("get firm settings", err)
	}
	if m == nil {
		return warrant.DefaultFirmSettings(firm), nil
	}
	it, err := unmarshal[settingsItem](m)
	if err != nil {
		return warrant.FirmSettings{}, wrap("get firm settings", err)
	}
	fs := warrant.FirmSettings{FirmID: it.FirmID, SeparationOfDuties: it.SeparationOfDuties, Domains: it.Domains,
		UpdatedAt: parseTime(it.UpdatedAt)}
	if it.RetentionDays != nil {
		// A retention out of range is no retention to act on: the content
		// is kept (destroying early is the mistake that cannot be undone).
		if warrant.CheckRetention("retention_days", it.RetentionDays) == nil {
			fs.RetentionDays = it.RetentionDays
		}
	}
	if it.MonthlyBudgetUSD != "" {
		// A budget that does not parse is no budget: zero, so the firm's
		// calls are refused until someone fixes it (never "unlimited").
		n, err := pricing.ParseUSD(it.MonthlyBudgetUSD)
		if err != nil {
			n = 0
		}
		v := int64(n)
		fs.MonthlyBudgetNano, fs.MonthlyBudgetUSD = &v, it.MonthlyBudgetUSD
	}
	return fs, nil
}

// PutFirmSettings saves a firm's settings whole.
func (s *Store) PutFirmSettings(ctx context.Context, fs warrant.FirmSettings) error {
	const op = "put firm settings"
	if err := checkIDs(op, "firm_id", fs.FirmID); err != nil {
		return err
	}
	if err := warrant.CheckDomains("domains", fs.Domains); err != nil {
		return invalid(op, "%v", err)
	}
	if err := warrant.CheckRetention("retention_days", fs.RetentionDays); err != nil {
		return invalid(op, "%v", err)
	}
	if len(fs.Domains) == 0 {
		fs.Domains = nil // as for a matter's client domains
	}
	it := settingsItem{PK: firmPK(fs.FirmID), SK: skSettings, FirmID: fs.FirmID,
		SeparationOfDuties: fs.SeparationOfDuties, Domains: fs.Domains, RetentionDays: fs.RetentionDays, UpdatedAt: fmtTime(s.nowUTC())}
	if fs.MonthlyBudgetNano != nil {
		if *fs.MonthlyBudgetNano < 0 {
			return invalid(op, "a monthly budget must not be negative")
		}
		it.MonthlyBudgetUSD = pricing.FormatUSD(pricing.Nano(*fs.MonthlyBudgetNano))
	}
	return s.putWhole(ctx, op, it)
}

// putWhole saves v as one whole item (a firm's own record: settings, a
// matter), unconditionally: the last save wins.
func (s *Store) putWhole(ctx context.Context, op string, v any) error {
	item, err := marshal(v)
	if err != nil {
		return wrap(op, err)
	}
	err = s.withConflictRetry(ctx, func() error {
		_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: item})
		return err
	})
	return wrap(op, err)
}

// A matter's record: FIRM#<firm> / MATTER#<matter>, in the firm's key space
// (outside every run's partition and the stream's EVT# filter). Each write
// of it also writes a version item, FIRM#<firm> / MATTERV#<matter>#<version,
// 12 digits>, outside the range ListMatters reads.
const (
	skMatter        = "MATTER#"
	skMatterVersion = "MATTERV#"
)

func matterVersionSK(matter string, version int64) string {
	return fmt.Sprintf("%s%s#%012d", skMatterVersion, matter, version)
}

type matterItem struct {
	PK            string   `dynamodbav:"PK"`
	SK            string   `dynamodbav:"SK"`
	FirmID        string   `dynamodbav:"firm_id"`
	MatterID      string   `dynamodbav:"matter_id"`
	Title         string   `dynamodbav:"title,omitempty"`
	ClientDomains []string `dynamodbav:"client_domains,omitempty"`
	RetentionDays *int     `dynamodbav:"retention_days,omitempty"`
	UpdatedAt     string   `dynamodbav:"updated_at"`
	// Version is absent on records written before matters kept versions,
	// which read as version 1.
	Version       int64  `dynamodbav:"version,omitempty"`
	UpdatedBy     string `dynamodbav:"updated_by,omitempty"`
	UpdatedByName string `dynamodbav:"updated_by_name,omitempty"`
}

func (it matterItem) matter() warrant.Matter {
	days := it.RetentionDays
	if warrant.CheckRetention("retention_days", days) != nil {
		days = nil // out of range: kept (see GetFirmSettings)
	}
	return warrant.Matter{FirmID: it.FirmID, MatterID: it.MatterID, Title: it.Title, ClientDomains: it.ClientDomains, RetentionDays: days,
		UpdatedAt: parseTime(it.UpdatedAt), Version: max(it.Version, 1), UpdatedBy: it.UpdatedBy, UpdatedByName: it.UpdatedByName}
}

// matterStateItem is what a version of a matter says.
type matterStateItem struct {
	Title         string   `dynamodbav:"title,omitempty"`
	ClientDomains []string `dynamodbav:"client_domains,omitempty"`
	RetentionDays *int     `dynamodbav:"retention_days,omitempty"`
}

func (it matterStateItem) state() warrant.MatterState {
	return warrant.MatterState{Title: it.Title, ClientDomains: it.ClientDomains, RetentionDays: it.RetentionDays}
}

type matterVersionItem struct {
	PK            string           `dynamodbav:"PK"`
	SK            string           `dynamodbav:"SK"`
	FirmID        string           `dynamodbav:"firm_id"`
	MatterID      string           `dynamodbav:"matter_id"`
	Version       int64            `dynamodbav:"version"`
	UpdatedBy     string           `dynamodbav:"updated_by"`
	UpdatedByName string           `dynamodbav:"updated_by_name,omitempty"`
	UpdatedAt     string           `dynamodbav:"updated_at"`
	Before        *matterStateItem `dynamodbav:"before,omitempty"`
	After         matterStateItem  `dynamodbav:"after"`
}

// GetMatter reads a matter's record (consistently). A matter with no record
// is ErrNotFound; the brain then knows no client domains.
func (s *Store) GetMatter(ctx context.Context, firm, matter string) (warrant.Matter, error) {
	if !idsOK(firm, matter) {
		return warrant.Matter{}, fail(warrant.ErrNotFound, nil, "matter %q", matter)
	}
	m, err := s.getItem(ctx, firmPK(firm), skMatter+matter)
	if err != nil {
		return warrant.Matter{}, wrap("get matter", err)
	}
	if m == nil {
		return warrant.Matter{}, fail(warrant.ErrNotFound, nil, "matter %s", matter)
	}
	it, err := unmarshal[matterItem](m)
	if err != nil {
		return warrant.Matter{}, wrap("get matter", err)
	}
	return it.matter(), nil
}

// PutMatter saves a matter's record whole as the version after ifVersion
// (0: the write creates the matter), written by m.UpdatedBy, and records
// the version (who, when, before and after) in the same transaction. The
// record's condition makes the check atomic: a matter that is not at
// ifVersion (or, to create it, exists) is ErrMatterVersion (ErrMatterExists)
// and nothing is written. It returns the matter as saved.
func (s *Store) PutMatter(ctx context.Context, m warrant.Matter, ifVersion int64) (warrant.Matter, error) {
	const op = "put matter"
	if err := checkIDs(op, "firm_id", m.FirmID, "matter_id", m.MatterID); err != nil {
		return warrant.Matter{}, err
	}
	if err := warrant.CheckDomains("client_domains", m.ClientDomains); err != nil {
		return warrant.Matter{}, invalid(op, "%v", err)
	}
	if err := warrant.CheckRetention("retention_days", m.RetentionDays); err != nil {
		return warrant.Matter{}, invalid(op, "%v", err)
	}
	if m.UpdatedBy == "" || ifVersion < 0 {
		return warrant.Matter{}, invalid(op, "a matter's write needs its writer and a version to replace (0: none)")
	}
	if len(m.ClientDomains) == 0 {
		// None is stored as no attribute, never an empty list (which
		// minidyn reads back as a string).
		m.ClientDomains = nil
	}
	pk, sk := firmPK(m.FirmID), skMatter+m.MatterID
	// The version replaced, for the history's "before": read first, and
	// held to it by the write's condition.
	cur, err := s.getItem(ctx, pk, sk)
	if err != nil {
		return warrant.Matter{}, wrap(op, err)
	}
	var before *matterStateItem
	switch {
	case ifVersion == 0 && cur != nil:
		return warrant.Matter{}, fail(warrant.ErrMatterExists, nil, "%s: matter %s", op, m.MatterID)
	case ifVersion > 0 && cur == nil:
		return warrant.Matter{}, fail(warrant.ErrMatterVersion, nil, "%s: matter %s has no record", op, m.MatterID)
	case cur != nil:
		it, err := unmarshal[matterItem](cur)
		if err != nil {
			return warrant.Matter{}, wrap(op, err)
		}
		if it.matter().Version != ifVersion {
			return warrant.Matter{}, fail(warrant.ErrMatterVersion, nil, "%s: matter %s is at version %d", op, m.MatterID, it.matter().Version)
		}
		before = &matterStateItem{Title: it.Title, ClientDomains: it.ClientDomains, RetentionDays: it.RetentionDays}
	}
	now := fmtTime(s.nowUTC())
	m.Version, m.UpdatedAt = ifVersion+1, parseTime(now)
	rec, err := marshal(matterItem{PK: pk, SK: sk, FirmID: m.FirmID, MatterID: m.MatterID, Title: m.Title, ClientDomains: m.ClientDomains,
		RetentionDays: m.RetentionDays, UpdatedAt: now, Version: m.Version, UpdatedBy: m.UpdatedBy, UpdatedByName: m.UpdatedByName})
	if err != nil {
		return warrant.Matter{}, wrap(op, err)
	}
	ver, err := marshal(matterVersionItem{PK: pk, SK: matterVersionSK(m.MatterID, m.Version), FirmID: m.FirmID, MatterID: m.MatterID,
		Version: m.Version, UpdatedBy: m.UpdatedBy, UpdatedByName: m.UpdatedByName, UpdatedAt: now, Before: before,
		After: matterStateItem{Title: m.Title, ClientDomains: m.ClientDomains, RetentionDays: m.RetentionDays}})
	if err != nil {
		return warrant.Matter{}, wrap(op, err)
	}
	// The record's condition is the version check: a write that read
	// version N and lost a race to another writer of N+1 fails here.
	cond, vals := "attribute_not_exists(#PK)", map[string]types.AttributeValue{}
	switch {
	case ifVersion == 1:
		// A record written before matters kept versions is version 1.
		cond, vals = "attribute_exists(#PK) AND (#version = :v OR attribute_not_exists(#version))", map[string]types.AttributeValue{":v": num(1)}
	case ifVersion > 1:
		cond, vals = "#version = :v", map[string]types.AttributeValue{":v": num(ifVersion)}
	}
	put := &types.Put{TableName: aws.String(s.table), Item: rec, ConditionExpression: aws.String(cond), ExpressionAttributeNames: names(cond)}
	if len(vals) > 0 {
		put.ExpressionAttributeValues = vals
	}
	const fresh = "attribute_not_exists(#SK)"
	err = s.transact(ctx, []types.TransactWriteItem{
		{Put: put},
		{Put: &types.Put{TableName: aws.String(s.table), Item: ver, ConditionExpression: aws.String(fresh), ExpressionAttributeNames: names(fresh)}},
	})
	if _, ok := firstFailedCondition(err); ok {
		if ifVersion == 0 {
			return warrant.Matter{}, fail(warrant.ErrMatterExists, err, "%s: matter %s was created meanwhile", op, m.MatterID)
		}
		return warrant.Matter{}, fail(warrant.ErrMatterVersion, err, "%s: matter %s moved past version %d meanwhile", op, m.MatterID, ifVersion)
	}
	if err != nil {
		return warrant.Matter{}, wrap(op, err)
	}
	return m, nil
}

// MatterVersions lists a matter's versions after version after, oldest
// first, at most limit of them (consistently), and whether more follow. A
// record written before matters kept versions has no version 1 item.
func (s *Store) MatterVersions(ctx context.Context, firm, matter string, after int64, limit int) ([]warrant.MatterVersion, bool, error) {
	if !idsOK(firm, matter) || limit < 1 {
		return nil, false, nil
	}
	var out []warrant.MatterVersion
	more := false
	const kc = "#PK = :pk AND #SK BETWEEN :from AND :to"
	in := &dynamodb.QueryInput{
		TableName: aws.String(s.table), KeyConditionExpression: aws.String(kc), ExpressionAttributeNames: names(kc),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(firmPK(firm)),
			":from": str(matterVersionSK(matter, after+1)), ":to": str(skMatterVersion + matter + "#~")},
		ConsistentRead: aws.Bool(true), Limit: aws.Int32(int32(min(limit+1, 1000))),
	}
	err := s.queryPages(ctx, in, func(m map[string]types.AttributeValue) (bool, error) {
		if len(out) == limit {
			more = true
			return true, nil
		}
		it, err := unmarshal[matterVersionItem](m)
		if err != nil {
			return true, err
		}
		v := warrant.MatterVersion{FirmID: it.FirmID, MatterID: it.MatterID, Version: it.Version, UpdatedBy: it.UpdatedBy,
			UpdatedByName: it.UpdatedByName, UpdatedAt: parseTime(it.UpdatedAt),
			After: it.After.state()}
		if it.Before != nil {
			b := it.Before.state()
			v.Before = &b
		}
		out = append(out, v)
		return false, nil
	})
	return out, more, wrap("matter versions", err)
}

// ListMatters lists a firm's matter records (consistently), by matter id.
func (s *Store) ListMatters(ctx context.Context, firm string) ([]warrant.Matter, error) {
	if !idsOK(firm) {
		return nil, nil
	}
	var out []warrant.Matter
	err := s.queryRange(ctx, firmPK(firm), skMatter, skMatter+"~", func(m map[string]types.AttributeValue) error {
		it, err := unmarshal[matterItem](m)
		if err != nil {
			return err
		}
		out = append(out, it.matter())
		return nil
	})
	return out, wrap("list matters", err)
}
