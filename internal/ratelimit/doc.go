// Package ratelimit bounds how often a repeated event is logged: at most
// n per period, the next allowed line saying how many were suppressed, so
// that a flood of bad input or failed publishes cannot flood the log.
package ratelimit
