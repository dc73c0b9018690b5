package config

import (
	"bytes"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/nats-io/nkeys"
	"golang.org/x/crypto/bcrypt"
)

var errPrefixRe = regexp.MustCompile(`^(\d+): `)

// FuzzDecodeConfig: any text decodes to a configuration that validates
// and survives a round trip through the TOML encoder, or fails with an
// error that starts with a line number of the input; never a panic.
func FuzzDecodeConfig(f *testing.F) {
	example, err := os.ReadFile("../dcgpd.toml")
	if err != nil {
		f.Fatal(err)
	}
	// The security keys, with a bcrypt hash and a public nkey made here.
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		f.Fatal(err)
	}
	kp, err := nkeys.CreateUser()
	if err != nil {
		f.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	security := "[nats]\nlisten = \"0.0.0.0:4222\"\nuser = \"d\"\npassword = \"p\"\n[nats.server_tls]\ncert_file = \"c.pem\"\nkey_file = \"k.pem\"\n" +
		"[[nats.users]]\nname = \"r\"\nrole = \"reader\"\npassword_hash = '" + string(hash) + "'\n[[nats.users]]\nname = \"p\"\nrole = \"publisher\"\nnkey = \"" + pub + "\"\n" +
		"[http]\nlisten = \":9464\"\nusername = \"ops\"\npassword_hash = '" + string(hash) + "'\ntoken_file = \"t\"\ninsecure_no_tls = true\n" +
		"[[models]]\nname = \"m\"\nbin = \"1h\"\n[[models.product]]\nname = \"a\"\n"
	if _, err := DecodeConfig([]byte(security)); err != nil {
		f.Fatalf("the security seed: %v", err)
	}
	for _, s := range []string{
		security,
		string(example),
		goodConfig,
		"[[models]]\nname = \"m\"\nbin = \"1h\"\n[[models.product]]\nname = \"a\"\n",
		"[nats]\nurl = \"nats://u:p@a:4222\"\ntoken = \"t\"\n[http]\nlisten = \"off\"\n[[models]]\nname = \"m\"\nbin = \"90s\"\norigin = 2024-01-01T00:30:00+02:00\nproducts = \"p.csv\"\nlate = \"resmooth\"\n[models.online]\nsteps = 1\ndamping = 0.5\n",
		"models = [{name = \"m\", bin = \"1h\", horizon = 0, product = [{name = \"a\", features = [1.0, nan]}]}]\n",
		"[[models]]\nname = \"m\"\nbin = \"1h\"\n[[models.product]]\nname = \"a\"\n[models.model.mean]\nkind = \"periodic\"\nperiod = 2.0\nstep = 1.0\nestimate = false\n[models.model.mean.values]\na = [1.0, -2.0]\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		c, err := DecodeConfig([]byte(in))
		if err != nil {
			m := errPrefixRe.FindStringSubmatch(err.Error())
			if m == nil {
				t.Fatalf("error without a line number: %v", err)
			}
			line, _ := strconv.Atoi(m[1])
			if line > strings.Count(in, "\n")+1 {
				t.Fatalf("error names line %d of a %d-line input: %v", line, strings.Count(in, "\n")+1, err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("decoded but invalid: %v", err)
		}
		var buf bytes.Buffer
		if err := toml.NewEncoder(&buf).Encode(c); err != nil {
			return // the encoder cannot write every value the decoder takes
		}
		back, err := DecodeConfig(buf.Bytes())
		if err != nil {
			t.Fatalf("re-encoded configuration refused: %v\n%s", err, buf.Bytes())
		}
		if !sameConfig(c, back) {
			t.Fatalf("round trip changed the configuration:\n%+v\n%+v\n%s", c, back, buf.Bytes())
		}
	})
}

// sameConfig compares two configurations, origins as instants.
func sameConfig(a, b Config) bool {
	if len(a.Models) != len(b.Models) {
		return false
	}
	a.Models = append([]ModelConfig(nil), a.Models...)
	b.Models = append([]ModelConfig(nil), b.Models...)
	for i := range a.Models {
		if !a.Models[i].Origin.Equal(b.Models[i].Origin) {
			return false
		}
		a.Models[i].Origin = b.Models[i].Origin
	}
	return reflect.DeepEqual(a, b)
}
