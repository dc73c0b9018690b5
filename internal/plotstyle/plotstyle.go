// Package plotstyle holds the colours dcgpd's plots share, so that the
// demo's and the backtest's pictures read alike.
package plotstyle

import "image/color"

// Colours of the plotted series.
var (
	Band     = color.NRGBA{R: 70, G: 130, B: 200, A: 80}  // the latent demand's 90% band
	Mean     = color.RGBA{R: 30, G: 90, B: 170, A: 255}   // the latent mean
	True     = color.RGBA{R: 40, G: 40, B: 40, A: 255}    // the true demand
	Observed = color.RGBA{R: 120, G: 120, B: 120, A: 255} // observed demand
	Censored = color.RGBA{R: 210, G: 40, B: 30, A: 255}   // censored observations
)
