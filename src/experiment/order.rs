//! The order of an experiment's steps: every repeat runs every variant (and each of its
//! measurements); with `rotate`, repeat r starts at variant r, so whatever drifts on the
//! machine over time (its temperature, the page cache, a neighbour) favours no variant.

use serde::{Deserialize, Serialize};

use super::spec::Order;

/// One step: a measurement of a variant, in one repeat (from 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepAt {
    pub repeat: u32,
    pub variant: usize,
    pub measurement: usize,
}

pub fn steps(variants: usize, measurements: usize, repeats: u32, order: Order) -> Vec<StepAt> {
    let mut out = Vec::new();
    for r in 0..repeats {
        for k in 0..variants {
            let variant = match order {
                Order::Rotate => (k + r as usize) % variants,
                Order::AsWritten => k,
            };
            for measurement in 0..measurements {
                out.push(StepAt {
                    repeat: r + 1,
                    variant,
                    measurement,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_repeat_runs_every_variant_starting_one_later() {
        let s = steps(3, 1, 3, Order::Rotate);
        let order: Vec<(u32, usize)> = s.iter().map(|s| (s.repeat, s.variant)).collect();
        assert_eq!(
            order,
            [(1, 0), (1, 1), (1, 2), (2, 1), (2, 2), (2, 0), (3, 2), (3, 0), (3, 1)]
        );
        // Each variant is first, middle and last once.
        for v in 0..3 {
            let places: Vec<usize> = s
                .chunks(3)
                .map(|c| c.iter().position(|x| x.variant == v).unwrap())
                .collect();
            let mut sorted = places.clone();
            sorted.sort();
            assert_eq!(sorted, [0, 1, 2], "variant {v}: {places:?}");
        }
        let w = steps(2, 2, 1, Order::AsWritten);
        assert_eq!(
            w.iter().map(|s| (s.variant, s.measurement)).collect::<Vec<_>>(),
            [(0, 0), (0, 1), (1, 0), (1, 1)]
        );
    }
}
