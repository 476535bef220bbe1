package dynamo

import (
	"context"

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
	UpdatedAt        string `dynamodbav:"updated_at"`
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
	it := settingsItem{PK: firmPK(fs.FirmID), SK: skSettings, FirmID: fs.FirmID,
		SeparationOfDuties: fs.SeparationOfDuties, Domains: fs.Domains, UpdatedAt: fmtTime(s.nowUTC())}
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
// (outside every run's partition and the stream's EVT# filter).
const skMatter = "MATTER#"

type matterItem struct {
	PK            string   `dynamodbav:"PK"`
	SK            string   `dynamodbav:"SK"`
	FirmID        string   `dynamodbav:"firm_id"`
	MatterID      string   `dynamodbav:"matter_id"`
	Title         string   `dynamodbav:"title,omitempty"`
	ClientDomains []string `dynamodbav:"client_domains,omitempty"`
	UpdatedAt     string   `dynamodbav:"updated_at"`
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
	return warrant.Matter{FirmID: it.FirmID, MatterID: it.MatterID, Title: it.Title, ClientDomains: it.ClientDomains,
		UpdatedAt: parseTime(it.UpdatedAt)}, nil
}

// PutMatter saves a matter's record whole.
func (s *Store) PutMatter(ctx context.Context, m warrant.Matter) error {
	const op = "put matter"
	if err := checkIDs(op, "firm_id", m.FirmID); err != nil {
		return err
	}
	if err := checkIDs(op, "matter_id", m.MatterID); err != nil {
		return err
	}
	if err := warrant.CheckDomains("client_domains", m.ClientDomains); err != nil {
		return invalid(op, "%v", err)
	}
	return s.putWhole(ctx, op, matterItem{PK: firmPK(m.FirmID), SK: skMatter + m.MatterID, FirmID: m.FirmID, MatterID: m.MatterID,
		Title: m.Title, ClientDomains: m.ClientDomains, UpdatedAt: fmtTime(s.nowUTC())})
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
		out = append(out, warrant.Matter{FirmID: it.FirmID, MatterID: it.MatterID, Title: it.Title, ClientDomains: it.ClientDomains,
			UpdatedAt: parseTime(it.UpdatedAt)})
		return nil
	})
	return out, wrap("list matters", err)
}
