// Package logging builds the zap loggers used by every component. Each
// component takes a child logger named for it (logger.Named("dispatcher")).
package logging

import (
	"fmt"
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Options selects the output of the root logger.
type Options struct {
	Level  string // debug, info, warn, error; default info
	Format string // console or json; default console
}

// New builds the root logger, writing to stderr.
func New(o Options) (*zap.Logger, error) {
	lvl := zapcore.InfoLevel
	if o.Level != "" {
		if err := lvl.Set(o.Level); err != nil {
			return nil, fmt.Errorf("log level %q: %w", o.Level, err)
		}
	}
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	var encoder zapcore.Encoder
	switch o.Format {
	case "", "console":
		enc.EncodeLevel = zapcore.CapitalLevelEncoder
		encoder = zapcore.NewConsoleEncoder(enc)
	case "json":
		encoder = zapcore.NewJSONEncoder(enc)
	default:
		return nil, fmt.Errorf("log format %q: want console or json", o.Format)
	}
	core := zapcore.NewCore(encoder, zapcore.Lock(os.Stderr), lvl)
	return zap.New(core, zap.AddCaller()), nil
}
