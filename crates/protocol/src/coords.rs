//! Coordinate helpers: screenshot image pixels → viewport CSS pixels, and the viewport bounds
//! check every point target passes (`000_…` §06, "Canonical point"). Pure arithmetic.
//!
//! A canonical point is in CSS pixels from the viewport's top-left corner: not image pixels,
//! device pixels or document coordinates. An unscaled viewport screenshot is
//! `viewport × device_scale_factor × page_zoom` image pixels wide (page zoom shrinks the CSS
//! viewport and enlarges each CSS pixel). Providers often downscale images before a model
//! sees them, so mapping uses the actual image size over the CSS viewport, which covers both;
//! [`expected_image_size`] gives the unscaled size from scale and zoom.

use crate::action::PointTarget;
use crate::observation::{ImageSize, Viewport};

/// A point in viewport CSS pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CssPoint {
    /// CSS pixels from the viewport's left edge.
    pub x: f64,
    /// CSS pixels from the viewport's top edge.
    pub y: f64,
}

/// Why a point cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum CoordError {
    /// A coordinate is NaN or infinite.
    #[error("coordinates must be finite, got ({x}, {y})")]
    NotFinite {
        /// The x given.
        x: f64,
        /// The y given.
        y: f64,
    },
    /// The point is outside `0 ≤ x < width`, `0 ≤ y < height`.
    #[error("point ({x}, {y}) is outside the {width}×{height} viewport")]
    OutsideViewport {
        /// The x in CSS pixels.
        x: f64,
        /// The y in CSS pixels.
        y: f64,
        /// The viewport width in CSS pixels.
        width: f64,
        /// The viewport height in CSS pixels.
        height: f64,
    },
    /// The observation's metadata cannot map points (zero or non-finite sizes or scales).
    #[error("the observation's {0} is not a positive finite number")]
    BadMetadata(&'static str),
}

fn positive(value: f64, what: &'static str) -> Result<f64, CoordError> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(CoordError::BadMetadata(what))
    }
}

fn checked_viewport(viewport: &Viewport) -> Result<(f64, f64), CoordError> {
    Ok((
        positive(viewport.width, "viewport width")?,
        positive(viewport.height, "viewport height")?,
    ))
}

/// Checks a CSS point against the viewport: finite, `0 ≤ x < width`, `0 ≤ y < height`.
pub fn check_css_point(point: CssPoint, viewport: &Viewport) -> Result<CssPoint, CoordError> {
    let CssPoint { x, y } = point;
    if !(x.is_finite() && y.is_finite()) {
        return Err(CoordError::NotFinite { x, y });
    }
    let (width, height) = checked_viewport(viewport)?;
    if (0.0..width).contains(&x) && (0.0..height).contains(&y) {
        Ok(point)
    } else {
        Err(CoordError::OutsideViewport {
            x,
            y,
            width,
            height,
        })
    }
}

/// Checks a point target against the viewport it was planned for.
pub fn check_point_target(target: PointTarget, viewport: &Viewport) -> Result<(), CoordError> {
    check_css_point(
        CssPoint {
            x: f64::from(target.x),
            y: f64::from(target.y),
        },
        viewport,
    )
    .map(|_| ())
}

/// The size of an unscaled viewport screenshot: CSS viewport × device scale × page zoom,
/// rounded to whole pixels.
pub fn expected_image_size(viewport: &Viewport) -> Result<ImageSize, CoordError> {
    let (width, height) = checked_viewport(viewport)?;
    let scale = positive(viewport.device_scale_factor, "device scale factor")?
        * positive(viewport.page_zoom, "page zoom")?;
    let px = |css: f64| {
        let v = (css * scale).round();
        // Saturate: a viewport billions of pixels wide is metadata nonsense, not a panic.
        if v >= f64::from(u32::MAX) {
            u32::MAX
        } else {
            v as u32
        }
    };
    Ok(ImageSize {
        width: px(width),
        height: px(height),
    })
}

/// Maps a point in screenshot image pixels (as a model read it off the image, which may
/// have been downscaled) to viewport CSS pixels, and checks it lies inside the viewport.
pub fn image_to_css(
    x: f64,
    y: f64,
    image: ImageSize,
    viewport: &Viewport,
) -> Result<CssPoint, CoordError> {
    if !(x.is_finite() && y.is_finite()) {
        return Err(CoordError::NotFinite { x, y });
    }
    let (width, height) = checked_viewport(viewport)?;
    let image_width = positive(f64::from(image.width), "screenshot width")?;
    let image_height = positive(f64::from(image.height), "screenshot height")?;
    let point = CssPoint {
        x: x * width / image_width,
        y: y * height / image_height,
    };
    check_css_point(point, viewport)
}

/// Maps a point in device pixels of an unscaled capture to CSS pixels, using the device
/// scale factor and page zoom, and checks it lies inside the viewport.
pub fn device_to_css(x: f64, y: f64, viewport: &Viewport) -> Result<CssPoint, CoordError> {
    if !(x.is_finite() && y.is_finite()) {
        return Err(CoordError::NotFinite { x, y });
    }
    let scale = positive(viewport.device_scale_factor, "device scale factor")?
        * positive(viewport.page_zoom, "page zoom")?;
    check_css_point(
        CssPoint {
            x: x / scale,
            y: y / scale,
        },
        viewport,
    )
}

/// The point target of a checked CSS point: whole CSS pixels, rounded down (a point inside
/// the viewport stays inside).
pub fn to_point_target(point: CssPoint, viewport: &Viewport) -> Result<PointTarget, CoordError> {
    let CssPoint { x, y } = check_css_point(point, viewport)?;
    // Inside a finite positive viewport, floor() is ≥ 0 and below the width, which a real
    // viewport keeps far under u32::MAX; saturate anyway rather than wrap.
    let whole = |v: f64| {
        if v >= f64::from(u32::MAX) {
            u32::MAX
        } else {
            v.floor() as u32
        }
    };
    Ok(PointTarget {
        x: whole(x),
        y: whole(y),
    })
}
