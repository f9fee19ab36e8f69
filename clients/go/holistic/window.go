package holistic

import (
	"fmt"
	"sort"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/holistic-eval/holistic/clients/go/gen/holistic/v1"
)

// Presets are the window names every client accepts.
var Presets = map[string]pb.WindowPreset{
	"all": pb.WindowPreset_WINDOW_PRESET_ALL_TIME,
	"15m": pb.WindowPreset_WINDOW_PRESET_LAST_15_MINUTES,
	"1h":  pb.WindowPreset_WINDOW_PRESET_LAST_HOUR,
	"24h": pb.WindowPreset_WINDOW_PRESET_LAST_DAY,
	"1d":  pb.WindowPreset_WINDOW_PRESET_LAST_DAY,
	"7d":  pb.WindowPreset_WINDOW_PRESET_LAST_WEEK,
}

// Window is the time window a profile folds: a preset or a [start, end) range. The zero value is all time.
type Window struct {
	preset     pb.WindowPreset
	start, end time.Time
	isRange    bool
}

// AllTime is every prediction the service holds for the model.
var AllTime = Window{preset: pb.WindowPreset_WINDOW_PRESET_ALL_TIME}

// Preset is a named window: "all", "15m", "1h", "24h" (or "1d") or "7d".
func Preset(name string) (Window, error) {
	p, ok := Presets[name]
	if !ok {
		names := make([]string, 0, len(Presets))
		for n := range Presets {
			names = append(names, n)
		}
		sort.Strings(names)
		return Window{}, fmt.Errorf("unknown window %q; use one of %v or a range", name, names)
	}
	return Window{preset: p}, nil
}

// Range is the window from start (inclusive) to end (exclusive).
func Range(start, end time.Time) Window {
	return Window{start: start, end: end, isRange: true}
}

func (w Window) timeRange() *pb.TimeRange {
	return &pb.TimeRange{StartTime: timestamppb.New(w.start), EndTime: timestamppb.New(w.end)}
}

func (w Window) presetOrAll() pb.WindowPreset {
	if w.preset == pb.WindowPreset_WINDOW_PRESET_UNSPECIFIED {
		return pb.WindowPreset_WINDOW_PRESET_ALL_TIME
	}
	return w.preset
}

func (w Window) getRequest(model string) *pb.GetProfileRequest {
	if w.isRange {
		return &pb.GetProfileRequest{Model: model, Window: &pb.GetProfileRequest_Range{Range: w.timeRange()}}
	}
	return &pb.GetProfileRequest{Model: model, Window: &pb.GetProfileRequest_Preset{Preset: w.presetOrAll()}}
}

func (w Window) watchRequest(model string) *pb.WatchProfileRequest {
	if w.isRange {
		return &pb.WatchProfileRequest{Model: model, Window: &pb.WatchProfileRequest_Range{Range: w.timeRange()}}
	}
	return &pb.WatchProfileRequest{Model: model, Window: &pb.WatchProfileRequest_Preset{Preset: w.presetOrAll()}}
}

func (w Window) compareRequest(req *pb.CompareProfilesRequest) *pb.CompareProfilesRequest {
	if w.isRange {
		req.Window = &pb.CompareProfilesRequest_Range{Range: w.timeRange()}
	} else {
		req.Window = &pb.CompareProfilesRequest_Preset{Preset: w.presetOrAll()}
	}
	return req
}
