//! What a JSON number is to a policy: an integer within 64 bits, a decimal,
//! or a number that cannot be held exactly (an integer beyond 64 bits,
//! which JSON parsing could only round).
//!
//! The compiler refuses an ordering test against a bound that cannot be
//! held exactly (it would always fail) and the evaluator compares numbers
//! in this form (`eval`'s `compare_numbers`), so both read a number the
//! same way, from here.

use serde_json::Number;

/// A JSON number held exactly.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ExactNumber {
    /// An integer within 64 bits (signed or unsigned).
    Int(i128),
    /// A decimal, held as the double JSON parsing gave.
    Float(f64),
}

/// 2^64: a double at or beyond this that is a whole number is an integer
/// beyond 64 bits, which JSON parsing could only round.
const TWO_POW_64: f64 = 18_446_744_073_709_551_616.0;

impl ExactNumber {
    /// The number, or `None` when it cannot be held exactly: an integer
    /// beyond 64 bits (parsed as a rounded double) or a value that is not
    /// finite.
    pub(crate) fn of(n: &Number) -> Option<ExactNumber> {
        if let Some(i) = n.as_i64() {
            return Some(ExactNumber::Int(i128::from(i)));
        }
        if let Some(u) = n.as_u64() {
            return Some(ExactNumber::Int(i128::from(u)));
        }
        let f = n.as_f64()?;
        if !f.is_finite() || (f.abs() >= TWO_POW_64 && f.fract() == 0.0) {
            return None;
        }
        Some(ExactNumber::Float(f))
    }
}
