//! Every command's grammar, on the raw argument bytes: the shared form of the
//! limiters (also an `RL.ALL` clause and an `RL.PEEK` call), the scalars they
//! share, `BLOCK`, `RL.ACQUIRE`, `CL.THROTTLE` and named policies. Parsing never touches a key.

pub mod acquire;
mod amount;
pub mod block;
mod form;
pub mod gcra;
mod kind;
mod limiter;
pub mod policy;
mod scalars;
#[cfg(test)]
mod tests;
pub mod throttle;

pub use amount::Charge;
pub use form::{parse, parse_form, Form, Request};
pub use kind::Kind;
pub use limiter::{Limiter, Parameters, Params};
