package gen

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateStamp(t *testing.T) {
	for _, tc := range []struct {
		name   string
		modify func(*Config)
		field  string // "" = valid
		msg    string
	}{
		{"valid", func(*Config) {}, "", ""},
		{"no count", func(c *Config) { c.Count = 0; c.Duration = 1 }, "Count", "needs a count of 1..4294967296"},
		{"count past 32 bits", func(c *Config) { c.Count = MaxStampCount + 1 }, "Count", "32 bits"},
		{"count of 2^32", func(c *Config) { c.Count = MaxStampCount }, "", ""},
		{"run id", func(c *Config) { c.RunID = 0 }, "RunID", "non-zero run id"},
		{"IPv4 frame too small", func(c *Config) { c.Frame.Size = 61 }, "Frame.Size", "at least 62"},
		{"IPv4 VLAN frame too small", func(c *Config) { c.Frame.VLAN = 5; c.Frame.Size = 64 }, "Frame.Size", "at least 66"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig()
			c.Stamp, c.RunID = true, 42
			tc.modify(&c)
			err := c.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field || !strings.Contains(fe.Msg, tc.msg) {
				t.Fatalf("Validate = %v, want a FieldError on %s containing %q", err, tc.field, tc.msg)
			}
		})
	}
	// Without Stamp none of this is asked for.
	c := validConfig()
	c.Frame.Size, c.Count, c.Duration = 60, 0, 1
	if err := c.Validate(); err != nil {
		t.Errorf("unstamped run: %v", err)
	}
}

func TestBatchSize(t *testing.T) {
	for _, tc := range []struct {
		batch, limit int
		stamp        bool
		rate         uint64
		want         uint32
	}{
		{0, 0, false, 0, BatchSize},
		{0, 0, true, 0, BatchSize},
		{0, 0, false, 5_000, 1},
		{0, 0, false, 200_000, 20},
		{0, 0, false, 10_000_000, BatchSize},
		{0, 0, true, 200_000, 1},
		{8, 0, true, 200_000, 8},
		{8, 0, false, 0, 8},
		{0, MaxBatch, false, 0, MaxBatch},
		{0, MaxBatch, false, 2_000_000, BatchSize}, // paced: bursts no larger than the default's
		{0, MaxBatch, true, 0, MaxBatch},
		{8, MaxBatch, false, 0, 8},
	} {
		if got := batchSize(Config{Batch: tc.batch, FullSpeedBatch: tc.limit, Stamp: tc.stamp}, tc.rate); got != tc.want {
			t.Errorf("batchSize(Batch %d, FullSpeedBatch %d, Stamp %v, rate %d) = %d, want %d", tc.batch, tc.limit, tc.stamp, tc.rate, got, tc.want)
		}
	}
	for _, field := range []string{"Batch", "FullSpeedBatch"} {
		for _, b := range []int{-1, MaxBatch + 1} {
			c := validConfig()
			if field == "Batch" {
				c.Batch = b
			} else {
				c.FullSpeedBatch = b
			}
			var fe *FieldError
			if err := c.Validate(); !errors.As(err, &fe) || fe.Field != field {
				t.Errorf("%s %d: Validate = %v, want a FieldError on %s", field, b, err, field)
			}
		}
	}
	c := validConfig()
	c.Batch, c.FullSpeedBatch = MaxBatch, MaxBatch
	if err := c.Validate(); err != nil {
		t.Errorf("Batch and FullSpeedBatch %d refused: %v", MaxBatch, err)
	}
}
