//! A minimal PNG encoder with no dependencies: 8-bit RGB, one IDAT chunk holding a zlib stream
//! of "stored" (uncompressed) deflate blocks with its Adler-32, every chunk with its CRC-32.
//! Enough for test images that any decoder accepts.

/// The PNG of a `width` × `height` image of one colour.
pub(crate) fn solid(width: u32, height: u32, rgb: [u8; 3]) -> Vec<u8> {
    let row: Vec<u8> = std::iter::once(0u8) // filter type: none
        .chain((0..width).flat_map(|_| rgb))
        .collect();
    let raw: Vec<u8> = (0..height).flat_map(|_| row.iter().copied()).collect();
    encode(width, height, &raw)
}

/// A PNG of filtered scanlines `raw` (each row: a filter byte, then RGB triples).
fn encode(width: u32, height: u32, raw: &[u8]) -> Vec<u8> {
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut header = Vec::with_capacity(13);
    header.extend_from_slice(&width.to_be_bytes());
    header.extend_from_slice(&height.to_be_bytes());
    // Bit depth 8, colour type 2 (RGB), deflate, adaptive filtering, no interlace.
    header.extend_from_slice(&[8, 2, 0, 0, 0]);
    chunk(&mut png, b"IHDR", &header);
    chunk(&mut png, b"IDAT", &zlib_stored(raw));
    chunk(&mut png, b"IEND", &[]);
    png
}

fn chunk(png: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    let length = u32::try_from(data.len()).unwrap_or(u32::MAX);
    png.extend_from_slice(&length.to_be_bytes());
    let start = png.len();
    png.extend_from_slice(kind);
    png.extend_from_slice(data);
    let crc = crc32(&png[start..]);
    png.extend_from_slice(&crc.to_be_bytes());
}

/// A zlib stream of stored deflate blocks (at most 65,535 bytes each).
fn zlib_stored(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x78, 0x01];
    let blocks: Vec<&[u8]> = if data.is_empty() {
        vec![&[]]
    } else {
        data.chunks(65_535).collect()
    };
    let last = blocks.len() - 1;
    for (i, block) in blocks.into_iter().enumerate() {
        out.push(u8::from(i == last)); // BFINAL, BTYPE = 00 (stored)
        let len = u16::try_from(block.len()).unwrap_or(u16::MAX);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(block);
    }
    out.extend_from_slice(&adler32(data).to_be_bytes());
    out
}

pub(crate) fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in data {
        a = (a + u32::from(byte)) % 65_521;
        b = (b + a) % 65_521;
    }
    (b << 16) | a
}

pub(crate) fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for &byte in data {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xedb8_8320 & mask);
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums_match_their_reference_values() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
        assert_eq!(adler32(b"Wikipedia"), 0x11e6_0398);
        assert_eq!(crc32(b"IEND"), 0xae42_6082);
    }

    #[test]
    fn a_solid_image_has_signature_header_data_and_end() {
        let png = solid(8, 8, [10, 20, 30]);
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(&png[12..16], b"IHDR");
        assert_eq!(u32::from_be_bytes([png[16], png[17], png[18], png[19]]), 8);
        assert_eq!(&png[png.len() - 8..png.len() - 4], b"IEND");
        // 8 rows of 1 + 24 bytes, stored in one block after the zlib header.
        let idat = 8 + 25;
        assert_eq!(&png[idat + 4..idat + 8], b"IDAT");
        let data = &png[idat + 8..];
        assert_eq!(&data[..3], &[0x78, 0x01, 0x01]);
        assert_eq!(u16::from_le_bytes([data[3], data[4]]), 200);
        assert_eq!(&data[7..11], &[0, 10, 20, 30]);
    }

    #[test]
    fn large_images_span_several_stored_blocks() {
        let png = solid(300, 300, [1, 2, 3]);
        // 300 × (1 + 900) bytes = 270,300: five blocks of 5 bytes' overhead each.
        assert_eq!(png.len(), 8 + 25 + 12 + 2 + 270_300 + 5 * 5 + 4 + 12);
    }
}
