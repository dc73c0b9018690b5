package main

import (
	"context"
	"errors"
	"io"
)

func runExperiment(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}

func runSimulate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}
