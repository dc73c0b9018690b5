package test

import (
	"fmt"
	"strings"
	"time"

	"github.com/dcgpd/dcgpd/stream/wire"
)

// hasFiltered reports whether byID, outputs by Nats-Msg-Id, holds model's
// filtered estimate of the bin starting at start, whatever the model
// digest that ends its id (<model>/<bin>/filtered/0/<model_digest>).
func hasFiltered[V any](byID map[string]V, model string, start time.Time) bool {
	prefix := fmt.Sprintf("%s/%d/%s/0/", model, start.Unix(), wire.KindFiltered)
	for id := range byID {
		if strings.HasPrefix(id, prefix) {
			return true
		}
	}
	return false
}
