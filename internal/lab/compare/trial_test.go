package compare

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/internal/lab/gen"
)

// sampleFails is a path whose second sample fails.
type sampleFails struct{ samples int }

func (r *sampleFails) start(context.Context) error { return nil }
func (r *sampleFails) sample() (sample, error) {
	if r.samples++; r.samples > 1 {
		return sample{}, errors.New("counters unreadable")
	}
	return sample{}, nil
}
func (r *sampleFails) stop() error       { return nil }
func (r *sampleFails) countedAt() string { return "nowhere" }
func (r *sampleFails) copies() int       { return 1 }
func (r *sampleFails) xdpMode() string   { return "none" }

// A trial that fails while its generator runs stops the generator and
// returns, rather than waiting out the generator's run.
func TestTrialStopsGeneratorOnError(t *testing.T) {
	parent, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var genEnd error
	s := &session{e: &env{}, info: PathInfo{Name: "fake"}, r: &sampleFails{},
		gen: func(ctx context.Context, _ gen.Config) (gen.Stats, error) {
			<-ctx.Done()
			genEnd = ctx.Err()
			return gen.Stats{}, ctx.Err()
		}}
	var row Row
	if _, err := s.trial(parent, &gen.Config{}, time.Hour, &row); err == nil {
		t.Fatal("trial succeeded with a path whose counters fail")
	}
	if !errors.Is(genEnd, context.Canceled) || parent.Err() != nil {
		t.Fatalf("the generator ended with %v (the run's context: %v): want it cancelled by the trial's error", genEnd, parent.Err())
	}
}
