package snapshot_test

import (
	"os"
	"testing"

	"github.com/dcgpd/dcgpd/snapshot"
	"github.com/dcgpd/dcgpd/snapshot/storetest"
)

// TestStoreSuite runs the store contract over the file store and the
// in-memory fake (package stream runs it over the JetStream store).
func TestStoreSuite(t *testing.T) {
	t.Run("file", func(t *testing.T) {
		storetest.Run(t, storetest.Harness{
			New: func(t *testing.T) snapshot.Store { return &snapshot.FileStore{Dir: t.TempDir()} },
			Damage: func(t *testing.T, s snapshot.Store, name string, g snapshot.Generation) {
				p := s.(*snapshot.FileStore).Path(name, g)
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, b[:len(b)-9], 0o600); err != nil {
					t.Fatal(err)
				}
			},
		})
	})
	t.Run("mem", func(t *testing.T) {
		storetest.Run(t, storetest.Harness{
			New: func(t *testing.T) snapshot.Store { return &storetest.Mem{} },
			Damage: func(t *testing.T, s snapshot.Store, name string, g snapshot.Generation) {
				s.(*storetest.Mem).Damage(name, g)
			},
		})
	})
}
