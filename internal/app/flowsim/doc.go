// Package flowsim measures how well station status polls recover the
// hourly pickups and returns of bike-share stations: from hourly counts
// taken as the riders' demand it simulates each station's bikes second by
// second (the counts' events at uniformly random times within their hour,
// the decision backtest's Poisson interleaving; stock bounded by
// 0..capacity; rebalancing trucks moving 5–15 bikes one every few
// seconds), polls the stations every 30 s, 1 min and 5 min, derives the
// flows with stream/statusflow, and scores them against the pickups and
// returns that happened. docs/derived-flows.md has the table.
package flowsim
