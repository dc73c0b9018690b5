package natsio

import (
	"github.com/nats-io/nats-server/v2/server"

	"github.com/dcgpd/dcgpd/config"
)

// The risk stream and bucket daemon/rebalance.go creates; a reader may
// read them.
const (
	riskStream = "DCGP_RISK"
	riskBucket = "dcgp_risk"
)

// serviceSubjects are the dcgpd micro service's request subjects
// (stream/query: dcgpd.estimate, dcgpd.status and their per-instance
// forms) and the micro discovery subjects.
var serviceSubjects = []string{"dcgpd.estimate", "dcgpd.estimate.>", "dcgpd.status", "dcgpd.status.>", "$SRV.>"}

// readStreamAPI is the JetStream API a client needs to read stream s:
// its info, ordered or durable consumers of its own (created, read,
// acknowledged and removed) and single-message and direct gets (how a
// key-value Get reads).
func readStreamAPI(s string) []string {
	return []string{
		"$JS.API.STREAM.INFO." + s,
		"$JS.API.CONSUMER.CREATE." + s, "$JS.API.CONSUMER.CREATE." + s + ".>",
		"$JS.API.CONSUMER.INFO." + s + ".>",
		"$JS.API.CONSUMER.MSG.NEXT." + s + ".>",
		// Ordered consumers delete the consumer they replace; a reader can
		// remove only consumers of the output streams, never the daemon's
		// (on the input streams).
		"$JS.API.CONSUMER.DELETE." + s + ".>",
		"$JS.ACK." + s + ".>",
		"$JS.API.STREAM.MSG.GET." + s,
		"$JS.API.DIRECT.GET." + s, "$JS.API.DIRECT.GET." + s + ".>",
	}
}

// RolePermissions maps a role of [[nats.users]] to the embedded server's
// permissions for the subjects under prefix (nil: everything, the admin).
//
// A reader publishes only requests: to the dcgpd service and to the
// JetStream API to read the output stream (estimates and forecasts, on
// <prefix>.latent.>), the risk stream and the latest-estimate and risk
// buckets; it subscribes to those subjects, the rejections and its own
// replies. A publisher publishes input (<prefix>.obs.>, the station
// status and EV status feeds) and receives its publish
// acknowledgements. Whatever the allow lists say, neither may publish to
// the JetStream API that deletes, purges or changes a stream, and a
// reader may not publish input: the denials are explicit so that a
// wider allow added later cannot reopen them.
func RolePermissions(role, prefix string) *server.Permissions {
	denyAdmin := []string{"$JS.API.STREAM.DELETE.>", "$JS.API.STREAM.PURGE.>", "$JS.API.STREAM.UPDATE.>",
		"$JS.API.STREAM.CREATE.>", "$JS.API.STREAM.MSG.DELETE.>"}
	input := []string{prefix + ".obs.>", prefix + ".status.>", prefix + ".evse.>"}
	switch role {
	case config.RoleReader:
		pub := []string{"$JS.API.INFO", "$JS.API.STREAM.NAMES", "$JS.API.STREAM.LIST"}
		pub = append(pub, serviceSubjects...)
		for _, s := range []string{LatentStream, riskStream, "KV_" + LatestBucket, "KV_" + riskBucket} {
			pub = append(pub, readStreamAPI(s)...)
		}
		return &server.Permissions{
			Publish: &server.SubjectPermission{Allow: pub, Deny: append(denyAdmin, input...)},
			Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.>", prefix + ".latent.>", prefix + ".risk.>",
				prefix + ".rejected.>", "$KV." + LatestBucket + ".>", "$KV." + riskBucket + ".>"}},
		}
	case config.RolePublisher:
		pub := append([]string{"$JS.API.INFO", "$JS.API.STREAM.NAMES", "$JS.API.STREAM.INFO." + ObsStream}, input...)
		return &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: pub, Deny: denyAdmin},
			Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.>", prefix + ".rejected.>"}},
		}
	default: // config.RoleAdmin; Validate refuses any other role
		return nil
	}
}
