//! `--rate` as written: a constant rate, or a shape the rate follows.

use std::sync::Arc;

use crate::engine::Shape;

/// `--rate` as written: a constant rate, or a shape (`engine::Shape`).
#[derive(Debug, Clone, PartialEq)]
pub struct Rate {
    /// The constant rate, or the shape's mean rate (0: flat out).
    pub per_s: f64,
    pub shape: Option<Arc<Shape>>,
}

impl Rate {
    pub fn parse(s: &str) -> std::result::Result<Rate, String> {
        Shape::parse(s).map(Rate::of)
    }

    /// A shape as a rate (a constant one is kept as its plain rate).
    pub fn of(shape: Shape) -> Rate {
        match shape.constant_rate() {
            Some(per_s) => Rate { per_s, shape: None },
            None => Rate {
                per_s: shape.mean_rate(),
                shape: Some(Arc::new(shape)),
            },
        }
    }

    /// The same at `factor` times the rate (a duet's half).
    pub fn scaled(&self, factor: f64) -> Rate {
        Rate {
            per_s: self.per_s * factor,
            shape: self.shape.as_ref().map(|s| Arc::new(s.scaled(factor))),
        }
    }
}
