//! The waiters, per key (database and name): a FIFO queue each, with the
//! key's one timer, and the index from a blocked client to its queue.
//! Everything here runs on the server's main thread.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::ffi::c_int;

use crate::decision::Claim;
use crate::observe::{self, Token};
use crate::server::{Blocked, Ctx, TimerId};
use crate::units::{Millis, Nanos};

/// One blocked client.
pub struct Waiter {
    pub bc: Blocked,
    pub claim: Claim,
    /// `None` for `BLOCK 0`.
    pub deadline: Option<Nanos>,
    /// Names the wait in `INFO rl`'s bookkeeping.
    pub token: Token,
}

pub struct Queue {
    pub db: c_int,
    pub name: Vec<u8>,
    pub waiters: VecDeque<Waiter>,
    /// The key's timer and the instant it fires.
    pub timer: Option<(TimerId, Millis)>,
}

/// A queue's id; a timer carries it as its data.
pub type QueueId = u64;

#[derive(Default)]
pub struct State {
    pub queues: HashMap<QueueId, Queue>,
    /// (db, key name) -> queue id.
    index: HashMap<c_int, HashMap<Vec<u8>, QueueId>>,
    /// Blocked client -> queue id.
    pub by_client: HashMap<usize, QueueId>,
    next_id: QueueId,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

/// Runs `f` on the queues (never re-entered: `f` makes no server call that
/// could call back into the module).
pub fn with<T>(f: impl FnOnce(&mut State) -> T) -> T {
    STATE.with(|s| f(&mut s.borrow_mut()))
}

/// The queue of key `name` in `db`, if it has one.
pub fn find(db: c_int, name: &[u8]) -> Option<QueueId> {
    with(|s| s.index.get(&db)?.get(name).copied())
}

/// The number of clients waiting on queue `qid`.
pub fn len(qid: QueueId) -> usize {
    with(|s| s.queues.get(&qid).map_or(0, |q| q.waiters.len()))
}

impl State {
    /// Queues `waiter` at the tail of key `name`'s queue (made if needed).
    pub fn push(&mut self, db: c_int, name: &[u8], waiter: Waiter) -> QueueId {
        let per_db = self.index.entry(db).or_default();
        let qid = match per_db.get(name) {
            Some(&qid) => qid,
            None => {
                self.next_id += 1;
                let qid = self.next_id;
                per_db.insert(name.to_vec(), qid);
                self.queues.insert(
                    qid,
                    Queue {
                        db,
                        name: name.to_vec(),
                        waiters: VecDeque::new(),
                        timer: None,
                    },
                );
                qid
            }
        };
        self.by_client.insert(waiter.bc.id(), qid);
        let q = self.queues.get_mut(&qid).expect("queue just found or made");
        q.waiters.push_back(waiter);
        observe::wait_began();
        qid
    }

    /// Forgets queue `qid` (its timer is the caller's to stop).
    pub fn remove(&mut self, qid: QueueId) {
        if let Some(q) = self.queues.remove(&qid) {
            if let Some(per_db) = self.index.get_mut(&q.db) {
                per_db.remove(&q.name);
                if per_db.is_empty() {
                    self.index.remove(&q.db);
                }
            }
        }
    }

    /// Takes every queue out (the index goes with them).
    pub fn take_all(&mut self) -> HashMap<QueueId, Queue> {
        self.index.clear();
        self.by_client.clear();
        std::mem::take(&mut self.queues)
    }
}

/// A waiter taken out of its queue.
pub struct Taken {
    pub waiter: Waiter,
    pub qid: QueueId,
    /// It was the head, and others still wait: the new head must be looked at.
    pub was_head: bool,
    /// The key's name.
    pub name: Vec<u8>,
}

/// Removes the waiter of client `bc` (and its queue and timer, if now empty).
pub fn take(ctx: Ctx, bc: Blocked) -> Option<Taken> {
    with(|s| {
        let qid = s.by_client.remove(&bc.id())?;
        let q = s.queues.get_mut(&qid)?;
        let i = q.waiters.iter().position(|w| w.bc == bc)?;
        let waiter = q.waiters.remove(i)?;
        let name = q.name.clone();
        let empty = q.waiters.is_empty();
        if empty {
            if let Some((id, _)) = q.timer {
                ctx.stop_timer(id);
            }
            s.remove(qid);
        }
        observe::wait_ended();
        Some(Taken {
            waiter,
            qid,
            was_head: i == 0 && !empty,
            name,
        })
    })
}
