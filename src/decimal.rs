//! Decimal digits of a `u64` on the stack: stored states, replicated times and
//! sliding-log members are written with no allocation; and read back.
//! Beneath everything, the algorithms included: it imports nothing of the crate.

/// Two decimal digits for each value below 100: `00`, `01`, ..., `99`.
const PAIRS: [u8; 200] = {
    let mut pairs = [0u8; 200];
    let mut i = 0;
    while i < 100 {
        pairs[2 * i] = b'0' + (i / 10) as u8;
        pairs[2 * i + 1] = b'0' + (i % 10) as u8;
        i += 1;
    }
    pairs
};

/// The decimal digits of a `u64`, written on the stack two at a time.
pub struct Decimal {
    buf: [u8; 20],
    start: usize,
}

impl Decimal {
    pub fn new(value: u64) -> Decimal {
        Decimal::padded(value, 1)
    }

    /// At least `min_digits` (at most 20) digits, zero-padded on the left.
    pub fn padded(mut value: u64, min_digits: usize) -> Decimal {
        let mut buf = [b'0'; 20];
        let mut start = 20;
        let mut put_pair = |start: usize, pair: u64| {
            let pair = pair as usize * 2;
            buf[start] = PAIRS[pair];
            buf[start + 1] = PAIRS[pair + 1];
        };
        // Four digits per division, then two, then one: a 19-digit instant
        // takes five divisions instead of nineteen.
        while value >= 10_000 {
            let four = value % 10_000;
            value /= 10_000;
            start -= 4;
            put_pair(start, four / 100);
            put_pair(start + 2, four % 100);
        }
        if value >= 100 {
            start -= 2;
            put_pair(start, value % 100);
            value /= 100;
        }
        if value >= 10 {
            start -= 2;
            put_pair(start, value);
        } else {
            start -= 1;
            buf[start] = b'0' + value as u8;
        }
        // The buffer is all zeros to the left of the digits.
        Decimal {
            buf,
            start: start.min(20 - min_digits.min(20)),
        }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[self.start..]
    }
}

/// Bytes built on the stack, at most `N` of them (stored values and
/// sliding-log members: no allocation on the hot path).
pub struct StackBytes<const N: usize> {
    buf: [u8; N],
    len: usize,
}

impl<const N: usize> StackBytes<N> {
    pub fn new() -> Self {
        StackBytes {
            buf: [0; N],
            len: 0,
        }
    }

    pub fn push(&mut self, bytes: &[u8]) {
        self.buf[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    /// At least `min_digits` decimal digits, zero-padded on the left.
    pub fn push_u64(&mut self, value: u64, min_digits: usize) {
        self.push(Decimal::padded(value, min_digits).as_bytes());
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// A non-empty run of at most 38 ASCII digits (always fits a `u128`).
pub fn parse_decimal(bytes: &[u8]) -> Option<u128> {
    if bytes.is_empty() || bytes.len() > 38 {
        return None;
    }
    // One pass. Up to 19 digits fit a u64 (< 10^19 < 2^64), so the first 19 are
    // parsed without 128-bit arithmetic; the wrapping operations cannot wrap.
    let (head, tail) = bytes.split_at(bytes.len().min(19));
    let mut small = 0u64;
    for &b in head {
        let digit = b.wrapping_sub(b'0');
        if digit > 9 {
            return None;
        }
        small = small.wrapping_mul(10).wrapping_add(u64::from(digit));
    }
    let mut value = u128::from(small);
    for &b in tail {
        let digit = b.wrapping_sub(b'0');
        if digit > 9 {
            return None;
        }
        // At most 38 digits: below 10^38 < 2^127.
        value = value.wrapping_mul(10).wrapping_add(u128::from(digit));
    }
    Some(value)
}

/// The run of 1 to 38 ASCII digits that `bytes` starts with, and its length;
/// `None` if it starts with no digit or with more than 38. One pass, eight
/// digits at a time where eight bytes remain (a stored instant's 19 digits
/// take two steps and three single digits): a stored state's fields are read
/// without looking for their end first.
#[inline(always)]
pub fn parse_leading(bytes: &[u8]) -> Option<(u128, usize)> {
    // Up to 19 digits in u64 arithmetic, which cannot wrap (< 10^19 < 2^64);
    // a longer run (a far-future instant) is read again in u128.
    let mut value = 0u64;
    let mut len = 0;
    while let Some(chunk) = bytes.get(len..len + 8) {
        let word = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        let digits = leading_digits(word);
        if len + digits > 19 {
            return parse_long(bytes);
        }
        if digits > 0 {
            value = value
                .wrapping_mul(POW10[digits])
                .wrapping_add(eight_digits(word, digits));
            len += digits;
        }
        if digits < 8 {
            return (len > 0).then_some((u128::from(value), len));
        }
    }
    for &b in &bytes[len..] {
        let digit = b.wrapping_sub(b'0');
        if digit > 9 {
            break;
        }
        if len == 19 {
            return parse_long(bytes);
        }
        value = value.wrapping_mul(10).wrapping_add(u64::from(digit));
        len += 1;
    }
    (len > 0).then_some((u128::from(value), len))
}

/// [`parse_leading`] of a run longer than 19 digits.
#[cold]
fn parse_long(bytes: &[u8]) -> Option<(u128, usize)> {
    let len = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
    parse_decimal(&bytes[..len]).map(|v| (v, len))
}

/// `10^n` for `n` in 0..=8.
const POW10: [u64; 9] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
];

/// How many of the eight bytes of `word` (first byte lowest) are ASCII digits
/// before the first that is not.
#[inline(always)]
fn leading_digits(word: u64) -> usize {
    // A byte is a digit iff its high nibble is 3 and adding 6 keeps it 3. A
    // carry out of a byte happens only from a byte that is not a digit, so
    // it never hides one, and only bytes after it can be misjudged.
    const HIGH: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    let high = (word & HIGH) ^ 0x3030_3030_3030_3030;
    let above = (word.wrapping_add(0x0606_0606_0606_0606) & HIGH) ^ 0x3030_3030_3030_3030;
    let bad = high | above;
    (bad.trailing_zeros() / 8) as usize
}

/// The value of the first `n` (1 to 8) bytes of `word`, all digits.
#[inline(always)]
fn eight_digits(word: u64, n: usize) -> u64 {
    // Keep the n digits as values 0-9, moved to the top: the bytes below are
    // leading zeros. Then pairs, quads and halves combine by multiplication.
    let values = (word.wrapping_sub(0x3030_3030_3030_3030)) << (8 * (8 - n));
    let pairs = (values.wrapping_mul(10) + (values >> 8)) & 0x00FF_00FF_00FF_00FF;
    let quads = (pairs.wrapping_mul(100) + (pairs >> 16)) & 0x0000_FFFF_0000_FFFF;
    (quads.wrapping_mul(10_000) + (quads >> 32)) & 0xFFFF_FFFF
}

/// A decimal `u64`, or `None`.
pub fn parse_u64(bytes: &[u8]) -> Option<u64> {
    parse_decimal(bytes).and_then(|v| u64::try_from(v).ok())
}

#[cfg(test)]
mod tests {
    use super::Decimal;

    #[test]
    fn decimal_writes_every_width_and_padding() {
        let mut v = 1u64;
        let mut widths = vec![0, 9, 10, 99, 100, 101, 1_796_045_952_663, u64::MAX];
        while let Some(next) = v.checked_mul(10) {
            widths.extend([v - 1, v, v + 1]);
            v = next;
        }
        for v in widths {
            assert_eq!(Decimal::new(v).as_bytes(), v.to_string().as_bytes());
            for pad in [0, 1, 3, 19, 20] {
                assert_eq!(
                    Decimal::padded(v, pad).as_bytes(),
                    format!("{v:0pad$}").as_bytes()
                );
            }
        }
    }
}

#[cfg(test)]
mod parse_tests {
    use super::{parse_decimal, parse_leading};

    /// What `parse_leading` must answer: the digits' run, read one by one.
    fn leading_reference(bytes: &[u8]) -> Option<(u128, usize)> {
        let len = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
        parse_decimal(&bytes[..len]).map(|v| (v, len))
    }

    #[test]
    fn parse_leading_reads_every_run_of_digits_and_stops_at_any_other_byte() {
        // Every run length 0..=40, each followed by every kind of byte (or
        // nothing), at every offset of an eight-byte step.
        let followers: Vec<Vec<u8>> = [
            &b""[..],
            b":",
            b"|",
            b"/",
            b"\x00",
            b"\xff",
            b"\xfa1",
            b":12|pen",
            b"a",
        ]
        .iter()
        .map(|f| f.to_vec())
        .chain(
            (0..=255u8)
                .filter(|b| !b.is_ascii_digit())
                .map(|b| vec![b, b'7']),
        )
        .collect();
        for len in 0..=40 {
            let digits: Vec<u8> = (0..len)
                .map(|i| b"9876543210"[(i * 7 + len) % 10])
                .collect();
            for follower in &followers {
                for pad in 0..8 {
                    let mut text = digits.clone();
                    text.extend_from_slice(follower);
                    text.extend(std::iter::repeat_n(
                        b'5',
                        pad * (follower.is_empty() as usize),
                    ));
                    assert_eq!(
                        parse_leading(&text),
                        leading_reference(&text),
                        "{:?}",
                        String::from_utf8_lossy(&text)
                    );
                }
            }
        }
        let max = u128::MAX.to_string();
        for text in [
            "0",
            "00000000000000000000000000000000000001",
            &max[..38],
            "18446744073709551616:1",
        ] {
            assert_eq!(
                parse_leading(text.as_bytes()),
                leading_reference(text.as_bytes()),
                "{text}"
            );
        }
    }

    #[test]
    fn parse_decimal_agrees_with_the_standard_parser() {
        let nines = "9".repeat(38);
        let cases = [
            "0",
            "7",
            "10",
            "1796045952663730620",
            "18446744073709551615",
            "18446744073709551616",
            &nines,
            "00012",
        ];
        for text in cases {
            assert_eq!(
                parse_decimal(text.as_bytes()),
                text.parse::<u128>().ok(),
                "{text}"
            );
        }
        let too_long = "1".repeat(39);
        for bad in ["", "+1", "-1", "1a", "/", ":", "1 ", &too_long] {
            assert_eq!(parse_decimal(bad.as_bytes()), None, "{bad:?}");
        }
    }
}
