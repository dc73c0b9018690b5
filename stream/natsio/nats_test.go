package natsio

import (
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
)

// TestStripCredentials: credentials leave every URL of the list and come
// back as one option; the URLs without them are untouched.
func TestStripCredentials(t *testing.T) {
	cases := []struct {
		in, url        string
		user, pass, tk string
		err            string
	}{
		{in: "", url: ""},
		{in: "nats://a:4222,nats://b:4222", url: "nats://a:4222,nats://b:4222"},
		{in: "nats://u:p%40ss@a:4222", url: "nats://a:4222", user: "u", pass: "p@ss"},
		{in: "nats://s3cret@a:4222", url: "nats://a:4222", tk: "s3cret"},
		{in: "s3cret@a:4222", url: "nats://a:4222", tk: "s3cret"},
		{in: "tls://u:p@a:4222, tls://u:p@b:4222", url: "tls://a:4222,tls://b:4222", user: "u", pass: "p"},
		{in: "nats://u:p@a:4222,nats://b:4222", url: "nats://a:4222,nats://b:4222", user: "u", pass: "p"},
		{in: "nats://u:p@a:4222,nats://u:q@b:4222", err: "nats.url: the servers have different credentials"},
		{in: "nats://t1@a:4222,nats://t2@b:4222", err: "nats.url: the servers have different credentials"},
		{in: "nats://a:4222,nats://u:p@b:port", err: "nats.url: server 2 of the list is not a valid URL (not shown: it holds credentials)"},
		{in: "nats://u:p%zz@b:4222", err: "nats.url: server 1 of the list is not a valid URL"},
		{in: "nats://b:port", err: `nats.url: parse "nats://b:port"`},
	}
	for _, c := range cases {
		url, opt, err := stripCredentials(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: got %v, want error %q", c.in, err, c.err)
			}
			if err != nil && (strings.Contains(err.Error(), ":p@") || strings.Contains(err.Error(), "t1")) {
				t.Errorf("%q: error shows a secret: %v", c.in, err)
			}
			continue
		}
		if err != nil || url != c.url {
			t.Errorf("%q: got %q, %v; want %q", c.in, url, err, c.url)
			continue
		}
		var o nats.Options
		if opt != nil {
			if err := opt(&o); err != nil {
				t.Fatal(err)
			}
		}
		if o.User != c.user || o.Password != c.pass || o.Token != c.tk {
			t.Errorf("%q: option sets user %q password %q token %q", c.in, o.User, o.Password, o.Token)
		}
	}
}
