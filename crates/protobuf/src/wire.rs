//! The protobuf wire format: reading tags, varints and length-delimited values from an
//! untrusted buffer (every read is bounds-checked), and writing them.

/// Wire type 0: a base-128 varint.
pub(crate) const VARINT: u8 = 0;
/// Wire type 1: eight little-endian bytes.
pub(crate) const FIXED64: u8 = 1;
/// Wire type 2: a varint length, then that many bytes.
pub(crate) const LEN: u8 = 2;
/// Wire type 5: four little-endian bytes.
pub(crate) const FIXED32: u8 = 5;

/// Why a read failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WireError {
    /// The buffer ends inside a value.
    Truncated,
    /// A varint longer than ten bytes or overflowing 64 bits.
    VarintOverflow,
    /// A length larger than what is left of the buffer.
    LengthOutOfRange,
    /// Field number 0, or wire type 3, 4 (groups), 6 or 7.
    InvalidTag,
}

/// A cursor over a protobuf buffer.
pub(crate) struct Reader<'a> {
    data: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(data: &'a [u8]) -> Self {
        Reader { data }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    pub(crate) fn varint(&mut self) -> Result<u64, WireError> {
        let mut value: u64 = 0;
        for i in 0..10 {
            let (&byte, rest) = self.data.split_first().ok_or(WireError::Truncated)?;
            self.data = rest;
            // The tenth byte may only carry the 64th bit.
            if i == 9 && byte > 1 {
                return Err(WireError::VarintOverflow);
            }
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(WireError::VarintOverflow)
    }

    /// A tag: (field number, wire type).
    pub(crate) fn tag(&mut self) -> Result<(u32, u8), WireError> {
        let tag = self.varint()?;
        let number = u32::try_from(tag >> 3).map_err(|_| WireError::InvalidTag)?;
        let wire_type = (tag & 7) as u8;
        if number == 0 || !matches!(wire_type, VARINT | FIXED64 | LEN | FIXED32) {
            return Err(WireError::InvalidTag);
        }
        Ok((number, wire_type))
    }

    pub(crate) fn bytes(&mut self) -> Result<&'a [u8], WireError> {
        let len = self.varint()?;
        let len = usize::try_from(len).map_err(|_| WireError::LengthOutOfRange)?;
        if len > self.data.len() {
            return Err(WireError::LengthOutOfRange);
        }
        let (value, rest) = self.data.split_at(len);
        self.data = rest;
        Ok(value)
    }

    pub(crate) fn fixed64(&mut self) -> Result<u64, WireError> {
        let (head, rest) = self
            .data
            .split_first_chunk::<8>()
            .ok_or(WireError::Truncated)?;
        self.data = rest;
        Ok(u64::from_le_bytes(*head))
    }

    pub(crate) fn fixed32(&mut self) -> Result<u32, WireError> {
        let (head, rest) = self
            .data
            .split_first_chunk::<4>()
            .ok_or(WireError::Truncated)?;
        self.data = rest;
        Ok(u32::from_le_bytes(*head))
    }

    /// Skips the value of a field of an unknown number.
    pub(crate) fn skip(&mut self, wire_type: u8) -> Result<(), WireError> {
        match wire_type {
            VARINT => self.varint().map(drop),
            FIXED64 => self.fixed64().map(drop),
            LEN => self.bytes().map(drop),
            FIXED32 => self.fixed32().map(drop),
            _ => Err(WireError::InvalidTag),
        }
    }
}

pub(crate) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// How many bytes `put_varint` writes for `value`.
pub(crate) fn varint_len(value: u64) -> usize {
    (64 - (value | 1).leading_zeros() as usize).div_ceil(7)
}

/// How many bytes `put_tag` writes for a field number.
pub(crate) fn tag_len(number: u32) -> usize {
    varint_len(u64::from(number) << 3)
}

pub(crate) fn put_tag(out: &mut Vec<u8>, number: u32, wire_type: u8) {
    put_varint(out, (u64::from(number) << 3) | u64::from(wire_type));
}

pub(crate) fn put_bytes(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    put_tag(out, number, LEN);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn varint_lengths_match_what_is_written() {
        for value in [
            0,
            1,
            127,
            128,
            300,
            16_383,
            16_384,
            u64::from(u32::MAX),
            u64::MAX,
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, value);
            assert_eq!(varint_len(value), out.len(), "{value}");
        }
    }

    #[test]
    fn varints_round_trip() {
        for value in [
            0,
            1,
            127,
            128,
            300,
            u64::from(u32::MAX),
            u64::MAX,
            (-1i64) as u64,
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, value);
            let mut r = Reader::new(&out);
            assert_eq!(r.varint().unwrap(), value);
            assert!(r.is_empty());
        }
    }

    #[test]
    fn rejects_overlong_and_truncated_varints() {
        assert_eq!(
            Reader::new(&[0x80; 11]).varint(),
            Err(WireError::VarintOverflow)
        );
        let mut ten = [0xff; 10];
        ten[9] = 0x02;
        assert_eq!(Reader::new(&ten).varint(), Err(WireError::VarintOverflow));
        assert_eq!(
            Reader::new(&[0x80, 0x80]).varint(),
            Err(WireError::Truncated)
        );
        assert_eq!(Reader::new(&[]).varint(), Err(WireError::Truncated));
    }

    #[test]
    fn rejects_lengths_past_the_end() {
        let mut out = Vec::new();
        put_varint(&mut out, u64::MAX);
        assert_eq!(Reader::new(&out).bytes(), Err(WireError::LengthOutOfRange));
        assert_eq!(
            Reader::new(&[5, 1, 2]).bytes(),
            Err(WireError::LengthOutOfRange)
        );
        assert_eq!(Reader::new(&[2, 1, 2]).bytes().unwrap(), &[1, 2]);
    }

    #[test]
    fn tags_split_number_and_wire_type() {
        let mut out = Vec::new();
        put_tag(&mut out, 17, LEN);
        assert_eq!(Reader::new(&out).tag().unwrap(), (17, LEN));
        // Field number 0 and group wire types are invalid.
        assert_eq!(Reader::new(&[0x02]).tag(), Err(WireError::InvalidTag));
        assert_eq!(Reader::new(&[0x0b]).tag(), Err(WireError::InvalidTag));
        assert_eq!(Reader::new(&[0x0f]).tag(), Err(WireError::InvalidTag));
    }

    #[test]
    fn skips_each_wire_type() {
        let data = [0x96, 0x01, 1, 2, 3, 4, 5, 6, 7, 8, 2, 9, 9, 1, 2, 3, 4];
        let mut r = Reader::new(&data);
        r.skip(VARINT).unwrap();
        r.skip(FIXED64).unwrap();
        r.skip(LEN).unwrap();
        r.skip(FIXED32).unwrap();
        assert!(r.is_empty());
        assert_eq!(
            Reader::new(&[1, 2]).skip(FIXED32),
            Err(WireError::Truncated)
        );
    }
}
