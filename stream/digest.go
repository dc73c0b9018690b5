package stream

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/dcgpd/dcgpd/cvi/spec"
)

// ErrModelChanged refuses a snapshot made under another configuration of
// the model (a new model_file, say): restoring it would keep the old
// hyperparameters and state.
var ErrModelChanged = errors.New("the model's configuration changed since its snapshot")

// modelDigest is a digest of the model as its configuration builds it:
// the likelihood, every hyperparameter by name and value, which of them
// learning holds, whether it learns, the prior mean's values, and the
// model's shape as configured (kernels, diffusion transition, sites). It
// is taken from the built model and the configured values, not from the
// configuration's text, so that a comment or the order of keys in a model
// file does not change it; any value that changes the model does (and so
// does writing out a kernel that was left to its default).
func modelDigest(m *spec.Model, b *spec.Built) []byte {
	h := sha256.New()
	put := func(s string) {
		_, _ = h.Write([]byte(s))
		_, _ = h.Write([]byte{0})
	}
	num := func(x float64) { put(strconv.FormatUint(math.Float64bits(x), 16)) }
	put("likelihood=" + b.Likelihood)
	for _, p := range b.Parameters() {
		put(p.Name)
		num(p.Value)
	}
	fixed := make([]string, 0, len(b.Fixed))
	for n, on := range b.Fixed {
		if on {
			fixed = append(fixed, n)
		}
	}
	slices.Sort(fixed)
	put(fmt.Sprintf("fixed=%q learn=%t", fixed, b.Learn))
	for _, k := range m.Temporal {
		put(fmt.Sprintf("temporal %s harmonics=%d matern_order=%d", k.Kernel, k.Harmonics, k.MaternOrder))
	}
	d := &m.Diffusion
	put(fmt.Sprintf("product %s per_product=%t level_noise=%t diffusion steps=%d mode=%s transition=%s neighbours=%d cutoff=%g sites=%s",
		m.Product.Kernel, m.PerProduct, m.LevelNoise, d.Steps, d.Mode, d.Transition, d.Neighbours, d.Cutoff, d.Sites))
	if p := b.Mean; p != nil {
		num(p.Step)
		put(strconv.Itoa(p.Cells))
		for _, row := range p.M {
			put(strconv.Itoa(len(row)))
			for _, x := range row {
				num(x)
			}
		}
	}
	return h.Sum(nil)
}

// digestID is the model digest the estimates carry
// (wire.LatentMessage.ModelDigest): its first 8 bytes in hex.
func (r *Runner) digestID() string { return fmt.Sprintf("%.8x", r.digest) }
