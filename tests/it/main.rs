//! The integration tests: one test crate (one build, one link) whose modules each cover
//! one area, against real redis-server and valkey-server processes (`common`). Run
//! one with `cargo nextest run --release --test it -E 'test(name)'`.

#[macro_use]
mod common;

// The module's pure algorithms and integers, compiled here on their own: the
// library's arithmetic is compared with them (`functions_exact`).
#[allow(dead_code, unused_imports, clippy::all)]
#[path = "../../src/algorithm/mod.rs"]
mod algorithm;
#[allow(dead_code)]
#[path = "../../src/decimal.rs"]
mod decimal;

mod all;
mod bounds;
mod clients;
mod cluster;
mod commands;
mod debit;
mod edges;
mod faults;
mod functions;
mod functions_cluster;
mod functions_exact;
mod functions_penalty;
mod functions_policies;
mod functions_quota;
mod gcra;
mod gcra_registration;
mod gcra_state;
mod hostile;
mod key_handles;
mod lease;
mod memcheck;
mod operations;
mod peek;
mod penalty;
mod penalty_library;
mod policies;
mod policy_admin;
mod policy_file;
mod policy_file_safety;
mod policy_restart;
mod policy_waits;
mod production;
mod quota;
mod realtime;
mod refund;
mod replication;
mod resetstat;
mod signals;
mod throttle;
mod unload;
mod vectors;
mod wait;
mod wait_chaos;
mod wait_ends;
mod zone_table;
