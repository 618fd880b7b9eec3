//! Image sizes of base64 screenshots (PNG IHDR, JPEG SOF) without decoding, and the one place
//! screenshots are scaled and cropped for a model (PNG through the `png` crate: a provider's
//! image-size bound, a computer tool's zoom).

/// Decodes standard base64 (padding optional); `None` on any invalid character.
pub fn decode_base64(input: &str) -> Option<Vec<u8>> {
    fn value(c: u8) -> Option<u32> {
        match c {
            b'A'..=b'Z' => Some(u32::from(c - b'A')),
            b'a'..=b'z' => Some(u32::from(c - b'a') + 26),
            b'0'..=b'9' => Some(u32::from(c - b'0') + 52),
            b'+' => Some(62),
            b'/' => Some(63),
            _ => None,
        }
    }
    let bytes: Vec<u8> = input
        .bytes()
        .filter(|b| !b.is_ascii_whitespace() && *b != b'=')
        .collect();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut acc = 0u32;
        for (i, c) in chunk.iter().enumerate() {
            acc |= value(*c)? << (18 - 6 * i);
        }
        let produced = match chunk.len() {
            4 => 3,
            3 => 2,
            2 => 1,
            _ => return None,
        };
        for i in 0..produced {
            out.push((acc >> (16 - 8 * i)) as u8);
        }
    }
    Some(out)
}

/// Width and height of a base64 PNG or JPEG.
pub fn image_size(base64: &str) -> Option<(u32, u32)> {
    // PNG: the IHDR sits in the first 33 bytes (44 base64 characters).
    let head = decode_base64(&base64[..base64.len().min(44)])?;
    if head.starts_with(b"\x89PNG\r\n\x1a\n") && head.len() >= 24 {
        let w = u32::from_be_bytes([head[16], head[17], head[18], head[19]]);
        let h = u32::from_be_bytes([head[20], head[21], head[22], head[23]]);
        return Some((w, h));
    }
    if head.starts_with(&[0xFF, 0xD8]) {
        return jpeg_size(&decode_base64(base64)?);
    }
    None
}

fn jpeg_size(bytes: &[u8]) -> Option<(u32, u32)> {
    let mut i = 2;
    while i + 9 < bytes.len() {
        if bytes[i] != 0xFF {
            i += 1;
            continue;
        }
        let marker = bytes[i + 1];
        let length = usize::from(u16::from_be_bytes([bytes[i + 2], bytes[i + 3]]));
        // SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC) carry the frame size.
        if (0xC0..=0xCF).contains(&marker) && !matches!(marker, 0xC4 | 0xC8 | 0xCC) {
            let h = u32::from(u16::from_be_bytes([bytes[i + 5], bytes[i + 6]]));
            let w = u32::from(u16::from_be_bytes([bytes[i + 7], bytes[i + 8]]));
            return Some((w, h));
        }
        i += 2 + length;
    }
    None
}

/// Standard base64, padded.
pub fn encode_base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Why a screenshot could not be scaled or cropped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageError {
    #[error("the screenshot is not a PNG this can read: {0}")]
    Decode(String),
    #[error("the region is empty or outside the image")]
    Region,
    #[error("the image cannot be encoded: {0}")]
    Encode(String),
}

/// RGBA pixels.
struct Pixels {
    width: u32,
    height: u32,
    rgba: Vec<u8>,
}

fn decode_png(shot: &protocol::Screenshot) -> Result<Pixels, ImageError> {
    if shot.mime != protocol::ImageMime::Png {
        return Err(ImageError::Decode("only PNG screenshots are scaled".into()));
    }
    let bytes = decode_base64(&shot.data).ok_or_else(|| ImageError::Decode("not base64".into()))?;
    let mut decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder
        .read_info()
        .map_err(|e| ImageError::Decode(e.to_string()))?;
    let size = reader
        .output_buffer_size()
        .ok_or_else(|| ImageError::Decode("the image is too large".into()))?;
    let mut buffer = vec![0; size];
    let info = reader
        .next_frame(&mut buffer)
        .map_err(|e| ImageError::Decode(e.to_string()))?;
    buffer.truncate(info.buffer_size());
    let rgba = match info.color_type {
        png::ColorType::Rgba => buffer,
        png::ColorType::Rgb => buffer
            .chunks_exact(3)
            .flat_map(|p| [p[0], p[1], p[2], 255])
            .collect(),
        png::ColorType::GrayscaleAlpha => buffer
            .chunks_exact(2)
            .flat_map(|p| [p[0], p[0], p[0], p[1]])
            .collect(),
        png::ColorType::Grayscale => buffer.iter().flat_map(|&g| [g, g, g, 255]).collect(),
        png::ColorType::Indexed => {
            return Err(ImageError::Decode("an indexed PNG was not expanded".into()));
        }
    };
    Ok(Pixels {
        width: info.width,
        height: info.height,
        rgba,
    })
}

fn encode_png(pixels: &Pixels) -> Result<protocol::Screenshot, ImageError> {
    let mut out = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut out, pixels.width, pixels.height);
        encoder.set_color(png::ColorType::Rgba);
        encoder.set_depth(png::BitDepth::Eight);
        encoder.set_compression(png::Compression::Fast);
        let mut writer = encoder
            .write_header()
            .map_err(|e| ImageError::Encode(e.to_string()))?;
        writer
            .write_image_data(&pixels.rgba)
            .map_err(|e| ImageError::Encode(e.to_string()))?;
    }
    Ok(protocol::Screenshot {
        mime: protocol::ImageMime::Png,
        data: encode_base64(&out),
        width: pixels.width,
        height: pixels.height,
    })
}

/// The largest size of `width`×`height`'s aspect within `max_width`×`max_height` and
/// `max_pixels` (never larger than it is).
fn fitted(width: u32, height: u32, max_width: u32, max_height: u32, max_pixels: u64) -> (u32, u32) {
    let (w, h) = (f64::from(width.max(1)), f64::from(height.max(1)));
    let pixels = (max_pixels as f64 / (w * h)).sqrt();
    let scale = (f64::from(max_width) / w)
        .min(f64::from(max_height) / h)
        .min(pixels)
        .min(1.0);
    (
        ((w * scale).floor() as u32).max(1),
        ((h * scale).floor() as u32).max(1),
    )
}

/// Area-averaged resampling of the region `(x, y, w, h)` of `src` to `out_w`×`out_h` (a
/// downscale; each output pixel is the mean of the source pixels it covers).
fn resample(src: &Pixels, region: (f64, f64, f64, f64), out_w: u32, out_h: u32) -> Pixels {
    let (rx, ry, rw, rh) = region;
    let (sx, sy) = (rw / f64::from(out_w), rh / f64::from(out_h));
    let mut rgba = Vec::with_capacity(out_w as usize * out_h as usize * 4);
    for oy in 0..out_h {
        let y0 = (ry + f64::from(oy) * sy).floor() as u32;
        let y1 = ((ry + f64::from(oy + 1) * sy).ceil() as u32).clamp(y0 + 1, src.height);
        for ox in 0..out_w {
            let x0 = (rx + f64::from(ox) * sx).floor() as u32;
            let x1 = ((rx + f64::from(ox + 1) * sx).ceil() as u32).clamp(x0 + 1, src.width);
            let mut sum = [0u32; 4];
            for y in y0..y1 {
                let row = (y * src.width) as usize * 4;
                for x in x0..x1 {
                    let i = row + x as usize * 4;
                    for (c, s) in sum.iter_mut().enumerate() {
                        *s += u32::from(src.rgba[i + c]);
                    }
                }
            }
            let n = (y1 - y0) * (x1 - x0);
            rgba.extend(sum.iter().map(|s| (s / n.max(1)) as u8));
        }
    }
    Pixels {
        width: out_w,
        height: out_h,
        rgba,
    }
}

/// The colour masked regions are painted with (opaque dark grey).
pub const MASK_RGBA: [u8; 4] = [60, 60, 60, 255];

/// `shot` with each region `(x, y, width, height)` (image pixels, clipped to the image) painted
/// over in [`MASK_RGBA`]: secret fields and text showing a typed secret, before any model or log
/// receives the image. A JPEG comes back as a PNG (there is no JPEG decoder here).
pub fn mask_screenshot(
    shot: &protocol::Screenshot,
    regions: &[(f64, f64, f64, f64)],
) -> Result<protocol::Screenshot, ImageError> {
    let mut pixels = match shot.mime {
        protocol::ImageMime::Png => decode_png(shot)?,
        protocol::ImageMime::Jpeg => {
            return Err(ImageError::Decode(
                "a JPEG screenshot cannot be masked; capture PNG".into(),
            ));
        }
    };
    let (w, h) = (f64::from(pixels.width), f64::from(pixels.height));
    for &(x, y, rw, rh) in regions {
        if !(x.is_finite() && y.is_finite() && rw.is_finite() && rh.is_finite()) {
            continue;
        }
        let (x0, y0) = (
            x.floor().clamp(0.0, w) as u32,
            y.floor().clamp(0.0, h) as u32,
        );
        let (x1, y1) = (
            (x + rw).ceil().clamp(0.0, w) as u32,
            (y + rh).ceil().clamp(0.0, h) as u32,
        );
        for row in y0..y1 {
            let start = (row * pixels.width + x0) as usize * 4;
            let end = (row * pixels.width + x1) as usize * 4;
            for p in pixels.rgba[start..end].chunks_exact_mut(4) {
                p.copy_from_slice(&MASK_RGBA);
            }
        }
    }
    encode_png(&pixels)
}

/// `shot` scaled down (aspect kept) to fit a provider's bounds; unchanged, without decoding,
/// when it already fits. Points read off the result map to CSS pixels by its own size.
pub fn fit_screenshot(
    shot: &protocol::Screenshot,
    max_width: u32,
    max_height: u32,
    max_pixels: u64,
) -> Result<protocol::Screenshot, ImageError> {
    let (w, h) = fitted(shot.width, shot.height, max_width, max_height, max_pixels);
    if (w, h) == (shot.width, shot.height) {
        return Ok(shot.clone());
    }
    let pixels = decode_png(shot)?;
    encode_png(&resample(
        &pixels,
        (0.0, 0.0, f64::from(pixels.width), f64::from(pixels.height)),
        w,
        h,
    ))
}

/// The region `(x0, y0)`–`(x1, y1)` of `shot` (in its pixels), at its full resolution or scaled
/// down to fit the bounds: a computer tool's zoom.
pub fn crop_screenshot(
    shot: &protocol::Screenshot,
    (x0, y0, x1, y1): (f64, f64, f64, f64),
    max_width: u32,
    max_height: u32,
    max_pixels: u64,
) -> Result<protocol::Screenshot, ImageError> {
    let pixels = decode_png(shot)?;
    let (x0, x1) = (x0.max(0.0), x1.min(f64::from(pixels.width)));
    let (y0, y1) = (y0.max(0.0), y1.min(f64::from(pixels.height)));
    if !(x1 - x0 >= 1.0 && y1 - y0 >= 1.0) {
        return Err(ImageError::Region);
    }
    let (w, h) = fitted(
        (x1 - x0).round() as u32,
        (y1 - y0).round() as u32,
        max_width,
        max_height,
        max_pixels,
    );
    encode_png(&resample(&pixels, (x0, y0, x1 - x0, y1 - y0), w, h))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_known_vectors() {
        assert_eq!(decode_base64("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(decode_base64("aGVsbG8h").unwrap(), b"hello!");
        assert_eq!(decode_base64("aGk").unwrap(), b"hi");
        assert!(decode_base64("a$==").is_none());
    }

    #[test]
    fn png_size_is_read_from_ihdr() {
        // A 3x2 PNG header (signature + IHDR), base64.
        let png = [
            0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, b'I', b'H', b'D', b'R', 0,
            0, 0, 3, 0, 0, 0, 2, 8, 6, 0, 0, 0,
        ];
        let encoded = encode_base64(&png);
        assert_eq!(image_size(&encoded), Some((3, 2)));
        assert_eq!(encode_base64(b"hello"), "aGVsbG8=");
        assert_eq!(
            decode_base64(&encode_base64(b"hello!!")).unwrap(),
            b"hello!!"
        );
    }

    /// A 40×20 PNG: left half red, right half blue.
    fn halves() -> protocol::Screenshot {
        let rgba: Vec<u8> = (0..20)
            .flat_map(|_| {
                (0..40).flat_map(|x| {
                    if x < 20 {
                        [255, 0, 0, 255]
                    } else {
                        [0, 0, 255, 255]
                    }
                })
            })
            .collect();
        encode_png(&Pixels {
            width: 40,
            height: 20,
            rgba,
        })
        .unwrap()
    }

    #[test]
    fn a_screenshot_is_fitted_to_bounds_and_cropped_at_full_resolution() {
        let shot = halves();
        assert_eq!(
            fit_screenshot(&shot, 100, 100, 1 << 20).unwrap(),
            shot,
            "one that fits is unchanged"
        );
        let small = fit_screenshot(&shot, 10, 100, 1 << 20).unwrap();
        assert_eq!((small.width, small.height), (10, 5), "aspect kept");
        let pixels = decode_png(&small).unwrap();
        assert_eq!(&pixels.rgba[..4], &[255, 0, 0, 255]);
        assert_eq!(&pixels.rgba[9 * 4..10 * 4], &[0, 0, 255, 255]);
        assert_eq!(
            fitted(2560, 1440, 1568, 1568, 1_150_000),
            (1429, 804),
            "a megapixel bound: 1,148,916 pixels"
        );
        let right = crop_screenshot(&shot, (25.0, 5.0, 35.0, 15.0), 100, 100, 1 << 20).unwrap();
        assert_eq!((right.width, right.height), (10, 10));
        assert!(
            decode_png(&right)
                .unwrap()
                .rgba
                .chunks(4)
                .all(|p| p == [0, 0, 255, 255])
        );
        assert_eq!(
            crop_screenshot(&shot, (50.0, 0.0, 60.0, 10.0), 100, 100, 1 << 20),
            Err(ImageError::Region)
        );
        assert!(matches!(
            fit_screenshot(
                &protocol::Screenshot {
                    data: "AAAA".into(),
                    ..shot
                },
                1,
                1,
                1
            ),
            Err(ImageError::Decode(_))
        ));
    }
}
