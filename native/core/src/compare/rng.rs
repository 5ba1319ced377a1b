//! A small seeded random source and the two distributions the bootstrap needs.
//!
//! Our own rather than a crate's so that a given seed gives the same draws on every platform and
//! in every future build: the gate's verdict must not change because a dependency changed its
//! algorithm. SplitMix64 passes BigCrush, which is far more than resampling latencies needs.

/// SplitMix64 (Steele, Lea and Flood, 2014).
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform on (0, 1]: never 0, so its logarithm is finite.
    pub(crate) fn open_unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform index in `0..n` (n > 0). The modulo bias is below 2^-40 for any n we see.
    #[cfg(test)]
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// Standard normal, by Box–Muller (one of the pair is dropped: simpler, and cheap enough).
    fn normal(&mut self) -> f64 {
        let u1 = self.open_unit();
        let u2 = self.open_unit();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Gamma(shape, 1) for shape ≥ 1, by Marsaglia and Tsang's method (2000): expected
    /// iterations below 1.05 for every shape, so a draw costs the same for 20 or 10^6.
    fn gamma(&mut self, shape: f64) -> f64 {
        debug_assert!(shape >= 1.0);
        let d = shape - 1.0 / 3.0;
        let c = 1.0 / (9.0 * d).sqrt();
        loop {
            let x = self.normal();
            let v = 1.0 + c * x;
            if v <= 0.0 {
                continue;
            }
            let v = v * v * v;
            let u = self.open_unit();
            if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
                return d * v;
            }
        }
    }

    /// Beta(a, b) for a, b ≥ 1, as X / (X + Y) with X ~ Gamma(a), Y ~ Gamma(b).
    pub(crate) fn beta(&mut self, a: f64, b: f64) -> f64 {
        let x = self.gamma(a);
        let y = self.gamma(b);
        x / (x + y)
    }
}

/// A seed for one named stream (a fingerprint, the overall comparison) of a run seeded with
/// `seed`: the same name always gets the same stream, whatever else is compared.
pub(crate) fn stream_seed(seed: u64, name: &str) -> u64 {
    let mut mix = Rng::new(seed ^ crate::fnv::hash(name.as_bytes()));
    mix.next_u64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_draws() {
        let a: Vec<u64> = (0..5)
            .scan(Rng::new(7), |r, _| Some(r.next_u64()))
            .collect();
        let b: Vec<u64> = (0..5)
            .scan(Rng::new(7), |r, _| Some(r.next_u64()))
            .collect();
        assert_eq!(a, b);
        assert_ne!(stream_seed(1, "a"), stream_seed(1, "b"));
        assert_ne!(stream_seed(1, "a"), stream_seed(2, "a"));
    }

    #[test]
    fn beta_has_its_mean_and_variance() {
        let mut rng = Rng::new(42);
        for (a, b) in [(1.0, 1.0), (3.0, 8.0), (95.0, 6.0), (950_000.0, 50_001.0)] {
            let n = 20_000;
            let draws: Vec<f64> = (0..n).map(|_| rng.beta(a, b)).collect();
            let mean = draws.iter().sum::<f64>() / n as f64;
            let var = draws.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
            let (m, v) = (a / (a + b), a * b / ((a + b).powi(2) * (a + b + 1.0)));
            // Five standard errors of the mean; 10 % on the variance.
            assert!(
                (mean - m).abs() < 5.0 * (v / n as f64).sqrt(),
                "mean {a},{b}: {mean} vs {m}"
            );
            assert!(
                (var / v - 1.0).abs() < 0.1,
                "variance {a},{b}: {var} vs {v}"
            );
            assert!(draws.iter().all(|x| (0.0..=1.0).contains(x)));
        }
    }
}
