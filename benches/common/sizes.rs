//! The rule counts a bench runs at: `MCPPOL_BENCH_SIZES=10,1000` picks
//! them, otherwise the bench's own default.

pub fn from_env(default: &[usize]) -> Vec<usize> {
    match std::env::var("MCPPOL_BENCH_SIZES") {
        Ok(list) => list
            .split(',')
            .filter_map(|s| s.trim().parse().ok())
            .collect(),
        Err(_) => default.to_vec(),
    }
}
