//! Plan format 2's primitives (docs/plan-format.md): the SplitMix64 sequence every seed and
//! draw comes from, and the permutation of record numbers. The derivations and the plan file
//! both stand on them.

pub const G: u64 = 0x9E37_79B9_7F4A_7C15;

pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The i-th output of a SplitMix64 sequence started at `s`.
#[inline]
pub fn rnd(s: u64, i: u64) -> u64 {
    mix64(s.wrapping_add(i.wrapping_add(1).wrapping_mul(G)))
}

/// A number in `[0, n)` from the high half of the 128-bit product (Lemire's method without
/// rejection: the bias is below n / 2^64).
#[inline]
pub fn below(x: u64, n: u64) -> u64 {
    ((x as u128 * n as u128) >> 64) as u64
}

/// A double in [0, 1) with 53 random bits, as Java's `nextDouble` makes them.
#[inline]
pub fn unit(x: u64) -> f64 {
    (x >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
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
    pub fn new(n: u64, key: u64) -> Perm {
        let mut bits = (64 - n.saturating_sub(1).leading_zeros()).max(2);
        bits += bits & 1;
        let half = bits / 2;
        let keys = [rnd(key, 0), rnd(key, 1), rnd(key, 2), rnd(key, 3)];
        Perm { n, half, mask: (1u64 << half) - 1, keys }
    }

    pub fn len(&self) -> u64 {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    #[inline]
    fn round_trip(&self, x: u64) -> u64 {
        let (mut l, mut r) = (x >> self.half, x & self.mask);
        for k in self.keys {
            (l, r) = (r, l ^ (mix64(r ^ k) & self.mask));
        }
        (l << self.half) | r
    }

    /// The image of `i` (`i < n`).
    #[inline]
    pub fn at(&self, i: u64) -> u64 {
        if self.n <= 1 {
            return 0;
        }
        let mut x = self.round_trip(i);
        while x >= self.n {
            x = self.round_trip(x);
        }
        x
    }
}

/// Appends `width` bytes of record `r`'s words `rnd(r, 0)`, `rnd(r, 1)`... big-endian: the first
/// word is a bijection of `r` (SplitMix64's finaliser is), so keys of 8 bytes or more are unique.
#[inline]
pub fn push_random_key(out: &mut Vec<u8>, r: u64, width: usize) {
    let end = out.len() + width;
    let mut j = 0;
    while out.len() < end {
        let word = rnd(r, j).to_be_bytes();
        out.extend_from_slice(&word[..(end - out.len()).min(8)]);
        j += 1;
    }
}
