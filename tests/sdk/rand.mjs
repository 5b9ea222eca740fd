// A small deterministic PRNG (mulberry32) for the generators in tests/sdk,
// so that a failing case can be made again from its seed.
export function rng(seed) {
  let s = Number(seed) >>> 0;
  const rnd = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n) => Math.floor(rnd() * n);
  return { rnd, int, pick: (a) => a[int(a.length)] };
}
