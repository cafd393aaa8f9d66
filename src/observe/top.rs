//! `RL.TOP`'s heavy-hitters summaries: the Space-Saving algorithm (Metwally,
//! Agrawal and El Abbadi, 2005) over the keys a policy or a command denied.
//!
//! A summary holds at most `capacity` entries, each a key, its count and its
//! overestimate. A denial of a key held adds one to its count; of a key not
//! held, it takes a free entry, or else replaces the entry with the smallest
//! count `m`, starting at `m + 1` with overestimate `m`. After `N` denials,
//! a held key's true denials lie between `count - overestimate` and `count`,
//! every overestimate is at most `N / capacity`, and every key denied more
//! than `N / capacity` times is held. A key's name is kept up to
//! [`MAX_KEY_BYTES`] bytes: a longer one is kept as its first
//! [`MAX_KEY_BYTES`] bytes followed by [`TRUNCATED`] (no name kept whole has
//! that length), and names alike in those bytes count as one. So a summary
//! holds at most `capacity × (MAX_KEY_BYTES + 3 + 40)` bytes, whatever the keys.

/// The most bytes of a key's name a summary keeps.
pub const MAX_KEY_BYTES: usize = 128;

/// What follows a name cut at [`MAX_KEY_BYTES`].
pub const TRUNCATED: &[u8] = b"...";

/// A key's name as a summary keeps it.
pub fn kept_name(name: &[u8]) -> Box<[u8]> {
    if name.len() <= MAX_KEY_BYTES {
        return name.into();
    }
    let mut kept = Vec::with_capacity(MAX_KEY_BYTES + TRUNCATED.len());
    kept.extend_from_slice(&name[..MAX_KEY_BYTES]);
    kept.extend_from_slice(TRUNCATED);
    kept.into_boxed_slice()
}

/// One key of a summary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub key: Box<[u8]>,
    /// Denials counted (at least the true number).
    pub count: u64,
    /// How much `count` may exceed the true number.
    pub overestimate: u64,
}

/// A Space-Saving summary (see the module doc).
#[derive(Clone, Debug, Default)]
pub struct Summary {
    entries: Vec<Entry>,
}

impl Summary {
    pub const fn new() -> Summary {
        Summary {
            entries: Vec::new(),
        }
    }

    /// Counts one denial of `key` (a name as [`kept_name`] keeps it), in a
    /// summary of at most `capacity` entries (a lowered capacity drops the
    /// lightest entries first).
    pub fn add(&mut self, key: &[u8], capacity: usize) {
        if capacity == 0 {
            self.entries.clear();
            return;
        }
        if self.entries.len() > capacity {
            self.sort();
            self.entries.truncate(capacity);
        }
        if let Some(e) = self.entries.iter_mut().find(|e| *e.key == *key) {
            e.count = e.count.saturating_add(1);
            return;
        }
        if self.entries.len() < capacity {
            self.entries.push(Entry {
                key: key.into(),
                count: 1,
                overestimate: 0,
            });
            return;
        }
        let min = self
            .entries
            .iter_mut()
            .min_by_key(|e| e.count)
            .expect("capacity > 0");
        min.overestimate = min.count;
        min.count = min.count.saturating_add(1);
        min.key = key.into();
    }

    fn sort(&mut self) {
        self.entries.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then(a.overestimate.cmp(&b.overestimate))
                .then(a.key.cmp(&b.key))
        });
    }

    /// The `n` heaviest entries, heaviest first (ties: the smaller
    /// overestimate, then the name).
    pub fn top(&self, n: usize) -> Vec<Entry> {
        let mut sorted = self.clone();
        sorted.sort();
        sorted.entries.truncate(n);
        sorted.entries
    }

    /// Forgets every entry.
    pub fn clear(&mut self) {
        self.entries = Vec::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_hold_and_heavy_keys_are_listed() {
        // A skewed stream: key i denied about 1000 / (i + 1) times, interleaved.
        let mut truth = std::collections::BTreeMap::<Vec<u8>, u64>::new();
        let mut s = Summary::default();
        let mut n = 0u64;
        for round in 0..1000u64 {
            for i in 0..200u64 {
                if round % (i + 1) == 0 {
                    let key = format!("k{i}").into_bytes();
                    *truth.entry(key.clone()).or_default() += 1;
                    s.add(&key, 16);
                    n += 1;
                }
            }
        }
        let top = s.top(16);
        assert_eq!(top.len(), 16);
        for e in &top {
            let t = truth[&e.key.to_vec()];
            assert!(e.count - e.overestimate <= t && t <= e.count, "{e:?} {t}");
        }
        for (key, &t) in &truth {
            if t > n / 16 {
                assert!(top.iter().any(|e| *e.key == **key), "{key:?} {t}");
            }
        }
        assert_eq!(top[0].key.as_ref(), b"k0");
    }

    #[test]
    fn long_names_are_cut_and_marked() {
        let long = vec![b'x'; 1000];
        let kept = kept_name(&long);
        assert_eq!(kept.len(), MAX_KEY_BYTES + 3);
        assert!(kept.ends_with(TRUNCATED));
        assert_eq!(&*kept_name(b"short"), b"short");
    }

    #[test]
    fn capacity_zero_or_lowered() {
        let mut s = Summary::default();
        for k in 0..10u8 {
            for _ in 0..=k {
                s.add(&[k], 10);
            }
        }
        s.add(&[9], 3);
        assert_eq!(s.top(10).len(), 3);
        assert_eq!(s.top(1)[0].key.as_ref(), &[9]);
        s.add(&[1], 0);
        assert!(s.top(10).is_empty());
    }
}
