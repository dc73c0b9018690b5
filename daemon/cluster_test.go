package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/stream/cluster"
	"github.com/dcgpd/dcgpd/stream/natstest"
	"github.com/dcgpd/dcgpd/stream/query"
)

// clusterModels are the models of the in-process cluster test.
var clusterModels = []string{"m1", "m2", "m3", "m4"}

// clusterConfig is one instance's configuration: cluster mode on the
// server at url, a 1 s lease, the page on a free port.
func clusterConfig(t *testing.T, url, instance string) config.Config {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "[nats]\nurl = %q\n[http]\nlisten = \"127.0.0.1:0\"\n[snapshot]\nstore = \"jetstream\"\n", url)
	fmt.Fprintf(&b, "[cluster]\nenabled = true\nlease = \"1s\"\ninstance = %q\n", instance)
	for _, m := range clusterModels {
		fmt.Fprintf(&b, "[[models]]\nname = %q\nbin = \"1h\"\n[[models.product]]\nname = \"a\"\nfeatures = [0.0, 0.0]\n", m)
	}
	cfg, err := config.DecodeConfig([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// instance runs one daemon until stop is called.
type instance struct {
	name string
	d    *Daemon
	stop func()
	done chan error
}

func startInstance(t *testing.T, url, name string) *instance {
	t.Helper()
	d, err := New(clusterConfig(t, url, name), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	in := &instance{name: name, d: d, stop: cancel, done: make(chan error, 1)}
	go func() { in.done <- d.Run(ctx) }()
	select {
	case <-d.Started():
	case err := <-in.done:
		t.Fatalf("%s: %v", name, err)
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not start in 30 s", name)
	}
	t.Cleanup(func() {
		cancel()
		<-in.done
	})
	return in
}

// waitLeases polls the lease bucket until want holds.
func waitLeases(t *testing.T, dir *cluster.Directory, what string, want func(map[string]string) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := map[string]string{}
		for _, m := range clusterModels {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			got[m], _ = dir.Owner(ctx, m)
			cancel()
		}
		if want(got) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30 s; leases %v", what, got)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// pageIndex is the part of /api/models the test reads.
type pageIndex struct {
	Instance string `json:"instance"`
	Models   []struct {
		Model string `json:"model"`
	} `json:"models"`
	Elsewhere []struct {
		Model    string `json:"model"`
		Instance string `json:"instance"`
	} `json:"elsewhere"`
}

func getIndex(t *testing.T, in *instance) pageIndex {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + in.d.HTTPAddr() + "/api/models")
	if err != nil {
		t.Fatalf("/api/models: %v", err)
	}
	defer resp.Body.Close()
	var idx pageIndex
	if err := json.NewDecoder(resp.Body).Decode(&idx); err != nil {
		t.Fatalf("/api/models: %v", err)
	}
	return idx
}

// TestClusterPageAndQueries: in cluster mode each instance's page lists
// the models it runs and where the others run, serves the models it runs
// and says where the others are; every model's status is answered
// through the shared query subject whichever instance takes the request.
// All of it keeps answering while leases move (a second instance joins,
// then the first leaves), under -race.
func TestClusterPageAndQueries(t *testing.T) {
	emb, nc := natstest.Embedded(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	dir := cluster.NewDirectory(js)

	a := startInstance(t, emb.ClientURL(), "a")
	waitLeases(t, dir, "a holds every model", func(o map[string]string) bool {
		for _, m := range clusterModels {
			if o[m] != "a" {
				return false
			}
		}
		return true
	})

	// Readers of the page and the queries, all the while leases move.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 10 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	read := func(in *instance, stop chan struct{}) {
		client := &http.Client{Timeout: 10 * time.Second}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			m := clusterModels[i%len(clusterModels)]
			for _, path := range []string{"/api/models", "/api/models/" + m} {
				resp, err := client.Get("http://" + in.d.HTTPAddr() + path)
				if err != nil {
					fail("GET %s: %v", path, err)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNotFound {
					fail("GET %s: %s", path, resp.Status)
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	stopA := make(chan struct{})
	var readA sync.WaitGroup
	readA.Add(1)
	go func() {
		defer readA.Done()
		read(a, stopA)
	}()

	b := startInstance(t, emb.ClientURL(), "b")
	wg.Add(1)
	go func() {
		defer wg.Done()
		read(b, stop)
	}()
	waitLeases(t, dir, "two models each", func(o map[string]string) bool {
		n := map[string]int{}
		for _, inst := range o {
			n[inst]++
		}
		return n["a"] == 2 && n["b"] == 2
	})
	time.Sleep(500 * time.Millisecond) // the new owners' runners recorded
	for _, in := range []*instance{a, b} {
		idx := getIndex(t, in)
		if len(idx.Models) != 2 || len(idx.Elsewhere) != 2 {
			t.Errorf("instance %s: /api/models lists %d models here and %d elsewhere, want 2 and 2: %+v", in.name, len(idx.Models), len(idx.Elsewhere), idx)
		}
		for _, e := range idx.Elsewhere {
			if e.Instance == "" || e.Instance == in.name {
				t.Errorf("instance %s: %s listed as running on %q", in.name, e.Model, e.Instance)
			}
		}
	}
	for _, m := range clusterModels {
		for range 4 { // a queue group spreads the requests over both instances
			msg, err := nc.Request(query.StatusSubject, []byte(`{"model":"`+m+`"}`), 10*time.Second)
			if err != nil {
				t.Fatalf("status of %s: %v", m, err)
			}
			var rep query.StatusReply
			if code := msg.Header.Get("Nats-Service-Error-Code"); code != "" || json.Unmarshal(msg.Data, &rep) != nil || rep.Model != m {
				t.Errorf("status of %s: %s %s %q", m, code, msg.Header.Get("Nats-Service-Error"), msg.Data)
			}
		}
	}

	close(stopA) // a's page goes away with a
	readA.Wait()
	a.stop()
	if err := <-a.done; err != nil {
		t.Errorf("a: %v", err)
	}
	a.done <- nil // for the cleanup
	waitLeases(t, dir, "b holds every model", func(o map[string]string) bool {
		for _, m := range clusterModels {
			if o[m] != "b" {
				return false
			}
		}
		return true
	})
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()
	if idx := getIndex(t, b); len(idx.Models) != len(clusterModels) || len(idx.Elsewhere) != 0 {
		t.Errorf("b alone: /api/models = %+v", idx)
	}
	for _, f := range failures {
		t.Error(f)
	}
}
