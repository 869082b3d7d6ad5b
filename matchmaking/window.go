package matchmaking

import "time"

// WindowAt is the rating window (±) of a ticket that has waited: Start,
// plus Step for every whole Every waited, at most Max.
func (r Rules) WindowAt(waited time.Duration) float64 {
	w := r.Window
	if w.Step <= 0 || w.Every <= 0 || waited <= 0 {
		return w.Start
	}
	steps := float64(waited / time.Duration(w.Every))
	return min(w.Start+w.Step*steps, w.Max)
}

// RegionsAt is the regions (in preference order) a ticket that has
// waited is matched in: the first at once, the next after each further
// RegionFallback (all at once when RegionFallback is 0).
func (r Rules) RegionsAt(regions []string, waited time.Duration) []string {
	if r.RegionFallback <= 0 {
		return regions
	}
	n := 1 + int(waited/time.Duration(r.RegionFallback))
	return regions[:min(n, len(regions))]
}
