//! What a call asks besides its key and policy: [`Call`]'s options (cost, `PEEK`, `BLOCK`),
//! and the [`Layer`]s an `RL.ALL` decides together ([`IntoLayer`]: a layer, or a tuple of a
//! key, a policy and a cost).

use crate::policy::Policy;

/// A call's options: its cost (`COST n`, default 1), `PEEK` (decide without writing), `BLOCK
/// ms` (wait inside the server until admitted or that long: keep the connection's response
/// timeout above it).
#[derive(Clone, Copy, Debug)]
pub struct Call {
    pub(crate) cost: u64,
    pub(crate) peek: bool,
    pub(crate) block_ms: Option<u64>,
}

impl Default for Call {
    fn default() -> Self {
        Call {
            cost: 1,
            peek: false,
            block_ms: None,
        }
    }
}

impl Call {
    /// Cost 1, no `PEEK`, no `BLOCK`.
    pub fn new() -> Call {
        Call::default()
    }

    /// The request's weight (`COST n`).
    pub fn cost(mut self, cost: u64) -> Call {
        self.cost = cost;
        self
    }

    /// Decide without writing (`PEEK`).
    pub fn peek(mut self) -> Call {
        self.peek = true;
        self
    }

    /// Wait in the server until admitted or `ms` milliseconds pass (`BLOCK ms`; 0: no limit).
    /// Neither reads nor writes the denial cache.
    pub fn block_ms(mut self, ms: u64) -> Call {
        self.block_ms = Some(ms);
        self
    }
}

/// One layer of [`Limiter::decide_all`](crate::Limiter::decide_all) and [`Limiter::reserve_all`](crate::Limiter::reserve_all): a key, a policy and
/// its cost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layer {
    /// The key.
    pub key: String,
    /// The policy.
    pub policy: Policy,
    /// Its cost: None is the call's (1 for `decide_all`; the estimate, settled, for
    /// `reserve_all`).
    pub cost: Option<u64>,
}

impl Layer {
    /// `key` by `policy`, at the call's cost.
    pub fn new(key: impl Into<String>, policy: &Policy) -> Layer {
        Layer {
            key: key.into(),
            policy: policy.clone(),
            cost: None,
        }
    }

    /// This layer at its own cost (in `reserve_all`: spent, never settled).
    pub fn cost(mut self, cost: u64) -> Layer {
        self.cost = Some(cost);
        self
    }
}

/// What [`Limiter::decide_all`](crate::Limiter::decide_all) takes as a layer: a [`Layer`], `(key, &Policy)`, `(key,
/// Policy)`, `(key, &Policy, cost)` or `(key, Policy, cost)`.
pub trait IntoLayer {
    /// The layer.
    fn to_layer(&self) -> Layer;
}

impl IntoLayer for Layer {
    fn to_layer(&self) -> Layer {
        self.clone()
    }
}

impl<K: AsRef<str>> IntoLayer for (K, &Policy) {
    fn to_layer(&self) -> Layer {
        Layer::new(self.0.as_ref(), self.1)
    }
}

impl<K: AsRef<str>> IntoLayer for (K, Policy) {
    fn to_layer(&self) -> Layer {
        Layer::new(self.0.as_ref(), &self.1)
    }
}

impl<K: AsRef<str>> IntoLayer for (K, &Policy, u64) {
    fn to_layer(&self) -> Layer {
        Layer::new(self.0.as_ref(), self.1).cost(self.2)
    }
}

impl<K: AsRef<str>> IntoLayer for (K, Policy, u64) {
    fn to_layer(&self) -> Layer {
        Layer::new(self.0.as_ref(), &self.1).cost(self.2)
    }
}
