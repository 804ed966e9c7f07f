//! Plan format 2's primitives (docs/plan-format.md): the SplitMix64 sequence every seed and
//! draw comes from, and the permutation of record numbers. The derivations and the plan file
//! both stand on them.

pub const G: u64 = 0x9E37_79B9_7F4A_7C15;

pub fn mix64(mut state: u64) -> u64 {
    state = (state ^ (state >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    state = (state ^ (state >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    state ^ (state >> 31)
}

/// The `index`-th output of a SplitMix64 sequence started at `seed`.
#[inline]
pub fn rnd(seed: u64, index: u64) -> u64 {
    mix64(seed.wrapping_add(index.wrapping_add(1).wrapping_mul(G)))
}

/// A number in `[0, bound)` from the high half of the 128-bit product (Lemire's method without
/// rejection: the bias is below bound / 2^64).
#[inline]
pub fn below(random: u64, bound: u64) -> u64 {
    ((random as u128 * bound as u128) >> 64) as u64
}

/// A double in [0, 1) with 53 random bits, as Java's `nextDouble` makes them.
#[inline]
pub fn unit(random: u64) -> f64 {
    (random >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// kvbench derives every seed of a job from the run's seed this way.
pub fn stream(seed: u64, id: u64) -> u64 {
    mix64(seed ^ mix64(id))
}

// ---------------------------------------------------------------------------------------------
// Permutation

/// A bijection of `0..n`: a 4-round Feistel network on an even number of bits, cycle-walking
/// until the result is below n. Round keys are computed once per permutation.
#[derive(Debug, Clone, Copy)]
pub struct Perm {
    n: u64,
    half: u32,
    mask: u64,
    keys: [u64; 4],
}

impl Perm {
    pub fn new(count: u64, key: u64) -> Perm {
        let mut bits = (64 - count.saturating_sub(1).leading_zeros()).max(2);
        bits += bits & 1;
        let half = bits / 2;
        let keys = [rnd(key, 0), rnd(key, 1), rnd(key, 2), rnd(key, 3)];
        Perm { n: count, half, mask: (1u64 << half) - 1, keys }
    }

    pub fn len(&self) -> u64 {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    #[inline]
    fn round_trip(&self, value: u64) -> u64 {
        let (mut l, mut r) = (value >> self.half, value & self.mask);
        for k in self.keys {
            (l, r) = (r, l ^ (mix64(r ^ k) & self.mask));
        }
        (l << self.half) | r
    }

    /// The image of `index` (`index < n`).
    #[inline]
    pub fn at(&self, index: u64) -> u64 {
        if self.n <= 1 {
            return 0;
        }
        let mut x = self.round_trip(index);
        while x >= self.n {
            x = self.round_trip(x);
        }
        x
    }
}

/// Appends `width` bytes of the words `rnd(record, 0)`, `rnd(record, 1)`... big-endian: the first
/// word is a bijection of `record` (SplitMix64's finaliser is), so keys of 8 bytes or more are unique.
#[inline]
pub fn push_random_key(out: &mut Vec<u8>, record: u64, width: usize) {
    let end = out.len() + width;
    let mut j = 0;
    while out.len() < end {
        let word = rnd(record, j).to_be_bytes();
        out.extend_from_slice(&word[..(end - out.len()).min(8)]);
        j += 1;
    }
}

/// Appends db_bench's key for `record`: its 8 big-endian bytes, then `0` characters up to
/// `width` bytes (the validated width is 8 or more).
pub fn push_db_bench_key(out: &mut Vec<u8>, record: u64, width: usize) {
    out.extend_from_slice(&record.to_be_bytes());
    out.resize(out.len() + width.saturating_sub(8), b'0');
}
