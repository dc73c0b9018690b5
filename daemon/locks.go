package daemon

import (
	"path/filepath"

	"github.com/dcgpd/dcgpd/internal/dirlock"
)

// lockDirs takes the directories this instance writes alone: the embedded
// server's JetStream store and the file snapshots. A second instance
// configured with either refuses to start, naming the holder's pid, instead
// of sharing the store and overwriting the first one's snapshots. release
// gives them up.
func (d *Daemon) lockDirs() (release func(), err error) {
	var held []*dirlock.Lock
	release = func() {
		for _, l := range held {
			if err := l.Release(); err != nil {
				d.log.Warn().Err(err).Msg("directory lock not released")
			}
		}
	}
	dirs := []struct{ dir, what string }{}
	if d.cfg.NATS.URL == "" {
		dirs = append(dirs, struct{ dir, what string }{d.cfg.NATS.StoreDir, "nats.store_dir"})
	}
	if d.cfg.Snapshot.Store == "file" && d.cfg.Snapshot.Dir != "off" {
		dirs = append(dirs, struct{ dir, what string }{d.cfg.Snapshot.Dir, "snapshot.dir"})
	}
	for i, x := range dirs {
		if i > 0 && filepath.Clean(x.dir) == filepath.Clean(dirs[0].dir) {
			continue // one directory for both: one lock
		}
		l, err := dirlock.Acquire(x.dir, x.what)
		if err != nil {
			release()
			return nil, err
		}
		held = append(held, l)
	}
	return release, nil
}
