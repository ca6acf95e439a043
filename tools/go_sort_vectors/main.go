// Command go_sort_vectors records how Go's sort.Sort orders arrays whose
// elements tie a lot, so that hamisim's Python/Cython port of the algorithm
// can be checked against the real thing.
//
// Every case is an array of small integer keys. Each element carries its
// original position; the array is sorted with sort.Sort using a Less that
// looks at the keys only, and the resulting order of original positions is
// recorded. Because sort.Sort is unstable, that order exposes exactly how the
// implementation moves equal elements around.
//
// The output is deterministic: inputs come from a fixed-seed splitmix64
// generator defined below, never from math/rand or the clock.
//
// Usage (see README.md):
//
//	go run tools/go_sort_vectors/main.go > tests/data/go_sort_orders.json
package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
)

// ---------------------------------------------------------------------------
// Deterministic input generation.

// rng is splitmix64: tiny, well known and identical on every Go release.
type rng struct{ state uint64 }

func (r *rng) next() uint64 {
	r.state += 0x9e3779b97f4a7c15
	z := r.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// intn returns a value in [0, n). The tiny modulo bias is irrelevant here.
func (r *rng) intn(n int) int {
	if n <= 1 {
		return 0
	}
	return int(r.next() % uint64(n))
}

type testCase struct {
	name string
	keys []int
}

// patterns returns the deterministic (non-random) shapes for length n.
func patterns(n int) []testCase {
	mk := func(name string, f func(i int) int) testCase {
		keys := make([]int, n)
		for i := range keys {
			keys[i] = f(i)
		}
		return testCase{name, keys}
	}
	half := n / 2
	if half == 0 {
		half = 1
	}
	return []testCase{
		mk("all_equal", func(i int) int { return 7 }),
		mk("ascending", func(i int) int { return i }),
		mk("descending", func(i int) int { return n - i }),
		mk("ascending_ties", func(i int) int { return i / 3 }),
		mk("descending_ties", func(i int) int { return (n - i) / 3 }),
		mk("sawtooth2", func(i int) int { return i % 2 }),
		mk("sawtooth3", func(i int) int { return i % 3 }),
		mk("sawtooth5", func(i int) int { return i % 5 }),
		mk("rev_sawtooth4", func(i int) int { return 3 - i%4 }),
		mk("organ_pipe", func(i int) int {
			if i < half {
				return i
			}
			return n - 1 - i
		}),
		mk("two_blocks", func(i int) int {
			if i < half {
				return 1
			}
			return 0
		}),
	}
}

// randomCases returns count arrays of length n with keys drawn from [0, span).
func randomCases(r *rng, n, span, count int) []testCase {
	var out []testCase
	for c := 0; c < count; c++ {
		keys := make([]int, n)
		for i := range keys {
			keys[i] = r.intn(span)
		}
		out = append(out, testCase{fmt.Sprintf("random_span%d_%d", span, c), keys})
	}
	return out
}

// nearlySorted returns ascending keys with a few random transpositions,
// which drives pdqsort into partialInsertionSort with shifting for n >= 50.
func nearlySorted(r *rng, n, swaps int) testCase {
	keys := make([]int, n)
	for i := range keys {
		keys[i] = i / 2
	}
	for s := 0; s < swaps && n > 1; s++ {
		a, b := r.intn(n), r.intn(n)
		keys[a], keys[b] = keys[b], keys[a]
	}
	return testCase{fmt.Sprintf("nearly_sorted_%d", swaps), keys}
}

// ---------------------------------------------------------------------------
// Adversarial inputs (McIlroy, "A Killer Adversary for Quicksort", 1999).
//
// The adversary decides element values lazily while sort.Sort runs: values
// start as "gas" (larger than everything) and are frozen to increasing
// integers only when a comparison needs it. Replaying the frozen values
// through sort.Sort takes the very same path, which is full of badly
// unbalanced partitions: this exercises breakPatterns (and so the xorshift
// generator) and the heapSort fallback.

type adversary struct {
	ids       []int // element ids, permuted by Swap
	val       []int // frozen value per id, or gas
	gas       int
	nsolid    int
	candidate int
}

func (a *adversary) Len() int      { return len(a.ids) }
func (a *adversary) Swap(i, j int) { a.ids[i], a.ids[j] = a.ids[j], a.ids[i] }
func (a *adversary) Less(i, j int) bool {
	x, y := a.ids[i], a.ids[j]
	if a.val[x] == a.gas && a.val[y] == a.gas {
		if x == a.candidate {
			a.freeze(x)
		} else {
			a.freeze(y)
		}
	}
	if a.val[x] == a.gas {
		a.candidate = x
	} else if a.val[y] == a.gas {
		a.candidate = y
	}
	return a.val[x] < a.val[y]
}

func (a *adversary) freeze(id int) {
	a.val[id] = a.nsolid
	a.nsolid++
}

func killerInput(n int) testCase {
	a := &adversary{ids: make([]int, n), val: make([]int, n), gas: n}
	for i := 0; i < n; i++ {
		a.ids[i] = i
		a.val[i] = a.gas
	}
	sort.Sort(a)
	keys := make([]int, n)
	copy(keys, a.val) // still-gaseous elements keep the value n (all tie)
	return testCase{"mcilroy_adversary", keys}
}

// ---------------------------------------------------------------------------
// Sorting under test.

// tagged sorts keys with a Less on keys only, carrying original positions.
type tagged struct {
	keys []int
	pos  []int
}

func (t *tagged) Len() int           { return len(t.keys) }
func (t *tagged) Less(i, j int) bool { return t.keys[i] < t.keys[j] }
func (t *tagged) Swap(i, j int) {
	t.keys[i], t.keys[j] = t.keys[j], t.keys[i]
	t.pos[i], t.pos[j] = t.pos[j], t.pos[i]
}

func goOrder(keys []int) []int {
	t := &tagged{keys: append([]int(nil), keys...), pos: make([]int, len(keys))}
	for i := range t.pos {
		t.pos[i] = i
	}
	sort.Sort(t)
	return t.pos
}

// ---------------------------------------------------------------------------

func buildCases() []testCase {
	r := &rng{state: 0x48414d4953494d} // "HAMISIM"
	var cases []testCase
	for n := 0; n <= 40; n++ {
		cases = append(cases, patterns(n)...)
		for _, span := range []int{2, 3, 4, 5} {
			cases = append(cases, randomCases(r, n, span, 2)...)
		}
		cases = append(cases, randomCases(r, n, n+1, 1)...)
		if n > 12 {
			cases = append(cases, killerInput(n))
		}
	}
	for _, n := range []int{50, 100, 200} {
		cases = append(cases, patterns(n)...)
		for _, span := range []int{2, 3, 4, 8, 16, n} {
			cases = append(cases, randomCases(r, n, span, 3)...)
		}
		cases = append(cases, nearlySorted(r, n, 1), nearlySorted(r, n, 3), nearlySorted(r, n, 8))
		cases = append(cases, killerInput(n))
	}
	return cases
}

func intList(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func main() {
	cases := buildCases()
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	fmt.Fprintf(w, "{\n")
	fmt.Fprintf(w, "  \"go_version\": %q,\n", runtime.Version())
	fmt.Fprintf(w, "  \"generator\": \"tools/go_sort_vectors/main.go\",\n")
	fmt.Fprintf(w, "  \"description\": \"perm[k] is the original index of the element at position k after sort.Sort with Less(i,j) = keys[i] < keys[j]\",\n")
	fmt.Fprintf(w, "  \"cases\": [\n")
	for i, c := range cases {
		sep := ","
		if i == len(cases)-1 {
			sep = ""
		}
		fmt.Fprintf(w, "    {\"name\": %q, \"n\": %d, \"keys\": %s, \"perm\": %s}%s\n",
			c.name, len(c.keys), intList(c.keys), intList(goOrder(c.keys)), sep)
	}
	fmt.Fprintf(w, "  ]\n}\n")
}
