package gpu

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// This file holds the TopologyAware capability (NVIDIA's in HAMi): the
// node's device-pair link scores and the topology-aware choice among the
// devices that fit.

// PairScore is the link score between two NVIDIA devices of a node (HAMi's
// hami.io/node-nvidia-score), higher for a better link (NVLink).
type PairScore struct {
	From, To string
	Score    int
}

// pairScoreJSON is one entry of hami.io/node-nvidia-score.
type pairScoreJSON struct {
	UUID   string         `json:"uuid"`
	Scores map[string]int `json:"score"`
}

// decodePairScores reads hami.io/node-nvidia-score as HAMi's
// DecodePairScores does (unknown keys ignored).
func decodePairScores(s string, p *field.Path) ([]PairScore, field.ErrorList) {
	var list []pairScoreJSON
	if err := decodeJSON(s, &list); err != nil {
		return nil, field.ErrorList{field.Invalid(p, s, "want [{\"uuid\":...,\"score\":{uuid:n}}]: "+err.Error())}
	}
	var out []PairScore
	for _, e := range list {
		for to, sc := range e.Scores {
			out = append(out, PairScore{From: e.UUID, To: to, Score: sc})
		}
	}
	slices.SortFunc(out, func(a, b PairScore) int {
		return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To), cmp.Compare(a.Score, b.Score))
	})
	return out, nil
}

// chooseByTopology keeps, of every device that fits, the r.Nums HAMi's
// topology-aware policy prefers: for one device the one worst linked to the
// others (so the well-linked ones stay together for bigger pods), for more
// the combination with the highest sum of pair scores; the first found wins
// a tie, in walk order.
func (p *picker) chooseByTopology(pairs []PairScore) {
	n := int(p.r.Nums)
	switch {
	case len(p.picked) < n:
		p.need = p.r.Nums - int32(len(p.picked))
		return
	case len(p.picked) == n:
	case n == 1:
		best, bestScore := 0, 0
		for i, a := range p.picked {
			total := 0
			for j, b := range p.picked {
				if i != j {
					total += pairScore(pairs, p.st.devs[a.idx].ID, p.st.devs[b.idx].ID)
				}
			}
			if i == 0 || total < bestScore {
				best, bestScore = i, total
			}
		}
		p.picked = []pick{p.picked[best]}
	default:
		p.picked = p.bestCombination(pairs, n)
	}
	p.need = 0
}

// maxCombinations bounds the topology search; past it the first devices in
// walk order are kept (HAMi enumerates every combination however many).
const maxCombinations = 100000

// bestCombination returns the n picks whose pair scores sum highest, a
// missing pair scoring 0 and the first combination in walk order winning a
// tie. The first combination is kept whatever its score: a best score
// started at -1 with nothing kept would return n zero-value picks (one
// device n times) when every pair scores -1 or lower; HAMi's
// computeBestCombination guards this with a found flag, and so does this.
func (p *picker) bestCombination(pairs []PairScore, n int) []pick {
	if binomial(len(p.picked), n) > maxCombinations {
		return p.picked[:n]
	}
	var best []int
	bestScore, found := 0, false
	cur := make([]int, 0, n)
	var walk func(start int)
	walk = func(start int) {
		if len(cur) == n {
			total := 0
			for i := 0; i < n-1; i++ {
				for j := i + 1; j < n; j++ {
					total += pairScore(pairs, p.st.devs[p.picked[cur[i]].idx].ID, p.st.devs[p.picked[cur[j]].idx].ID)
				}
			}
			if !found || total > bestScore {
				best, bestScore, found = slices.Clone(cur), total, true
			}
			return
		}
		for i := start; i <= len(p.picked)-(n-len(cur)); i++ {
			cur = append(cur, i)
			walk(i + 1)
			cur = cur[:len(cur)-1]
		}
	}
	walk(0)
	out := make([]pick, n)
	for i, k := range best {
		out[i] = p.picked[k]
	}
	return out
}

// binomial returns C(n, k), saturating past maxCombinations.
func binomial(n, k int) int {
	r := 1
	for i := 1; i <= k; i++ {
		r = r * (n - k + i) / i
		if r > maxCombinations {
			return maxCombinations + 1
		}
	}
	return r
}

// pairScore is the link score from device a to device b (0 when unknown).
func pairScore(pairs []PairScore, a, b string) int {
	i, ok := slices.BinarySearchFunc(pairs, [2]string{a, b}, func(s PairScore, k [2]string) int {
		return cmp.Or(cmp.Compare(s.From, k[0]), cmp.Compare(s.To, k[1]))
	})
	if !ok {
		return 0
	}
	return pairs[i].Score
}
