// Package page is the operator's page of `dcgpd serve`: plain HTML, CSS
// and JavaScript drawing SVG (static/, embedded in the binary), and its
// JSON at /api/models and /api/models/{model}, recorded from the models'
// read views and their input and output subjects. It reads the daemon
// through Source.
package page
