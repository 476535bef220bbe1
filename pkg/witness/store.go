package witness

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// State is what a witness keeps of a log: the last checkpoint it cosigned,
// its size and root (the chain head, hex), and the note with the witness's
// cosignature appended. The zero State is a log never cosigned.
type State struct {
	Size int64  `json:"size"`
	Head string `json:"head,omitempty"`
	Note string `json:"note,omitempty"`
}

// Store keeps a witness's State per log origin.
type Store interface {
	// Load answers origin's State (the zero State if none is kept).
	Load(ctx context.Context, origin string) (State, error)
	// Swap replaces origin's State with next only if the size kept is
	// still oldSize (0: none kept, or size 0), atomically; otherwise it
	// writes nothing and answers a *SizeChanged.
	Swap(ctx context.Context, origin string, oldSize int64, next State) error
}

// SizeChanged is Swap's answer when the size kept is not the old size the
// caller read: another submission was cosigned meanwhile. Size is the size
// kept now, when the store could read it (-1 otherwise).
type SizeChanged struct {
	Size int64
}

func (e *SizeChanged) Error() string {
	return fmt.Sprintf("witness: the log's kept size changed (now %d)", e.Size)
}

// DirStore keeps each log's State in a file of a directory, named by the
// hex SHA-256 of its origin: a witness run anywhere (a laptop, a server of
// the client's or the insurer's). A Swap holds an exclusive lock on the
// directory's lock file (flock, so other processes sharing the directory
// are excluded too) and writes a temporary file, syncs it and renames it
// over the old one, so a crash leaves the old State or the new one.
type DirStore struct {
	dir string
	mu  sync.Mutex
}

// NewDirStore keeps State in dir, creating it (0700) if needed.
func NewDirStore(dir string) (*DirStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("witness: the state directory: %v", err)
	}
	return &DirStore{dir: dir}, nil
}

func (d *DirStore) path(origin string) string {
	sum := sha256.Sum256([]byte(origin))
	return filepath.Join(d.dir, hex.EncodeToString(sum[:])+".json")
}

// Load reads origin's file.
func (d *DirStore) Load(_ context.Context, origin string) (State, error) {
	return d.read(origin)
}

func (d *DirStore) read(origin string) (State, error) {
	var st State
	raw, err := os.ReadFile(d.path(origin))
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("witness: reading the state of %s: %v", origin, err)
	}
	var kept struct {
		Origin string `json:"origin"`
		State
	}
	if err := json.Unmarshal(raw, &kept); err != nil || kept.Origin != origin {
		return st, fmt.Errorf("witness: the state file of %s is not a witness state", origin)
	}
	return kept.State, nil
}

// Swap writes next under the lock if the kept size is oldSize.
func (d *DirStore) Swap(_ context.Context, origin string, oldSize int64, next State) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	unlock, err := lockDir(filepath.Join(d.dir, ".lock"))
	if err != nil {
		return fmt.Errorf("witness: locking the state directory: %v", err)
	}
	defer unlock()
	cur, err := d.read(origin)
	if err != nil {
		return err
	}
	if cur.Size != oldSize {
		return &SizeChanged{Size: cur.Size}
	}
	raw, err := json.Marshal(struct {
		Origin string `json:"origin"`
		State
	}{origin, next})
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(d.dir, ".state-*")
	if err != nil {
		return fmt.Errorf("witness: writing the state of %s: %v", origin, err)
	}
	defer os.Remove(tmp.Name()) // after a rename, nothing
	if _, err = tmp.Write(raw); err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), d.path(origin))
	}
	if err != nil {
		return fmt.Errorf("witness: writing the state of %s: %v", origin, err)
	}
	if dir, err := os.Open(d.dir); err == nil { // the rename, durable
		_ = dir.Sync()
		dir.Close()
	}
	return nil
}
