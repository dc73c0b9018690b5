package snapshot

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Generation names one of the two snapshots a store keeps per model.
type Generation int

// The current snapshot and the one it replaced.
const (
	Current Generation = iota
	Previous
)

func (g Generation) String() string {
	if g == Previous {
		return "previous"
	}
	return "current"
}

// ErrNotFound reports that a store holds no snapshot of that generation.
var ErrNotFound = errors.New("no snapshot")

// Store keeps each model's current snapshot and the previous one.
// Implementations: FileStore, stream.JetStreamStore, storetest.Mem and
// failing fakes in tests; storetest.Run is the contract they all pass.
type Store interface {
	// Write makes data the model's current snapshot, keeping the one it
	// replaces as the previous; on error the current one is unchanged.
	Write(name string, data []byte) error
	// Read returns a generation's bytes, or an error wrapping ErrNotFound,
	// or ErrCorrupt when the store's own digest shows them damaged.
	Read(name string, g Generation) ([]byte, error)
}

// FileStore keeps snapshots as files NAME.snap and NAME.snap.prev in
// Dir (created 0700; files 0600).
type FileStore struct {
	Dir string
	// PauseBeforeRename holds a written, synced temporary file this long
	// before it replaces the current one: a fault-injection knob so a
	// crash test can kill the process mid-write. Zero in production.
	PauseBeforeRename time.Duration
}

// Path returns the file of a model's snapshot generation.
func (s *FileStore) Path(name string, g Generation) string {
	p := filepath.Join(s.Dir, name+".snap")
	if g == Previous {
		p += ".prev"
	}
	return p
}

// Write writes to a temporary file, syncs it, renames the current file to
// the previous one and the temporary one to the current, and syncs the
// directory, so a crash at any point leaves a complete current or
// previous snapshot.
func (s *FileStore) Write(name string, data []byte) error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("snapshot directory: %w", err)
	}
	f, err := os.CreateTemp(s.Dir, name+".snap.tmp-*")
	if err != nil {
		return fmt.Errorf("snapshot temporary file: %w", err)
	}
	tmp := f.Name()
	fail := func(err error) error {
		_ = f.Close()
		_ = os.Remove(tmp)
		return fmt.Errorf("writing snapshot %s: %w", tmp, err)
	}
	if err := f.Chmod(0o600); err != nil {
		return fail(err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	if s.PauseBeforeRename > 0 {
		time.Sleep(s.PauseBeforeRename)
	}
	cur := s.Path(name, Current)
	if err := os.Rename(cur, s.Path(name, Previous)); err != nil && !errors.Is(err, os.ErrNotExist) {
		_ = os.Remove(tmp)
		return fmt.Errorf("keeping the previous snapshot: %w", err)
	}
	if err := os.Rename(tmp, cur); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("installing snapshot %s: %w", cur, err)
	}
	return syncDir(s.Dir)
}

// Read returns a generation's bytes.
func (s *FileStore) Read(name string, g Generation) ([]byte, error) {
	b, err := os.ReadFile(s.Path(name, g))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, s.Path(name, g))
	}
	return b, err
}

// RemoveTemporary deletes temporary files a crash left behind.
func (s *FileStore) RemoveTemporary(name string) {
	tmps, _ := filepath.Glob(filepath.Join(s.Dir, name+".snap.tmp-*"))
	for _, t := range tmps {
		_ = os.Remove(t)
	}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing snapshot directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing snapshot directory: %w", err)
	}
	return nil
}

// Refusal is a snapshot generation that could not be used, and why.
type Refusal struct {
	Generation Generation
	Err        error
}

// Load returns the newest good snapshot of a model: the current one, or
// the previous one if the current is missing, corrupt or of another
// version. refused lists the generations passed over. With no good
// snapshot m is nil; err is non-nil only when a snapshot exists but none
// is usable because of its version (a newer dcgpd wrote it: starting
// afresh would silently drop its state), or on a read error.
func Load(s Store, name string) (m *Model, g Generation, refused []Refusal, err error) {
	var versionErr error
	for _, g := range []Generation{Current, Previous} {
		b, err := s.Read(name, g)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if errors.Is(err, ErrCorrupt) {
			// A store that checks a digest of its own (JetStream) reports
			// damaged bytes this way: refused like a bad checksum.
			refused = append(refused, Refusal{Generation: g, Err: err})
			continue
		}
		if err != nil {
			return nil, g, refused, fmt.Errorf("reading the %s snapshot of %s: %w", g, name, err)
		}
		m, err := Unmarshal(b)
		if err == nil && m.Name != name {
			err = fmt.Errorf("%w: snapshot is of model %q", ErrCorrupt, m.Name)
		}
		if err != nil {
			refused = append(refused, Refusal{Generation: g, Err: err})
			if errors.Is(err, ErrVersion) && versionErr == nil {
				versionErr = err
			}
			continue
		}
		return m, g, refused, nil
	}
	if versionErr != nil {
		return nil, Current, refused, fmt.Errorf("model %s: %w", name, versionErr)
	}
	return nil, Current, refused, nil
}
