// Package csvio reads and writes dcgpd's batch CSV formats:
//
//	OBS:       time,product,demand,supply[,censored]
//	PRODUCTS:  product,<feature columns>   (lat,lon columns mean geographic)
//	POSTERIOR: time,product,mean,var,pred_var,q05,q95
//
// Columns are found by header name, in any order. A time is a number, an
// RFC 3339 timestamp (seconds optional), or an ISO 8601 local time
// YYYY-MM-DDTHH:MM[:SS] (a space may replace the T) read as UTC; one file
// uses one kind. Timestamps become hours since the Unix
// epoch, so kernel lengthscales and periods are in hours. An empty demand
// is a cell to estimate but not observed; an empty supply is unlimited; a
// missing censored column means censored = demand >= supply. Every error
// names the file and line.
package csvio
