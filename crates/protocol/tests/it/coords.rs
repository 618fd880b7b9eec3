//! Image pixels → viewport CSS pixels at device scale 1, 2, 3 and page zoom 1.25 and 0.8.

use protocol::coords::{
    CoordError, CssPoint, check_point_target, device_to_css, expected_image_size, image_to_css,
    to_point_target,
};
use protocol::{ImageSize, PointTarget, Viewport};

fn viewport(dsf: f64, zoom: f64) -> Viewport {
    // Page zoom shrinks the CSS viewport of a 1280×800 DIP window.
    Viewport {
        width: 1280.0 / zoom,
        height: 800.0 / zoom,
        device_scale_factor: dsf,
        page_zoom: zoom,
        scroll_x: 0.0,
        scroll_y: 300.0,
    }
}

fn close(a: CssPoint, x: f64, y: f64) -> bool {
    (a.x - x).abs() < 1e-9 && (a.y - y).abs() < 1e-9
}

#[test]
fn mapping_at_every_scale_and_zoom() {
    for dsf in [1.0, 2.0, 3.0] {
        for zoom in [1.25, 0.8] {
            let vp = viewport(dsf, zoom);
            let image = expected_image_size(&vp).expect("valid metadata");
            assert_eq!(
                image,
                ImageSize {
                    width: (1280.0 * dsf) as u32,
                    height: (800.0 * dsf) as u32
                },
                "dsf {dsf} zoom {zoom}"
            );
            // The image center is the viewport center.
            let c = image_to_css(
                f64::from(image.width) / 2.0,
                f64::from(image.height) / 2.0,
                image,
                &vp,
            )
            .expect("inside");
            assert!(
                close(c, vp.width / 2.0, vp.height / 2.0),
                "{c:?} at dsf {dsf} zoom {zoom}"
            );
            // One CSS pixel is dsf × zoom image pixels.
            let p =
                image_to_css(dsf * zoom * 100.0, dsf * zoom * 50.0, image, &vp).expect("inside");
            assert!(close(p, 100.0, 50.0), "{p:?} at dsf {dsf} zoom {zoom}");
            // Device-pixel mapping agrees for an unscaled capture.
            let d = device_to_css(dsf * zoom * 100.0, dsf * zoom * 50.0, &vp).expect("inside");
            assert!(close(d, 100.0, 50.0));
            // The origin is inside; the right and bottom edges are not.
            assert!(image_to_css(0.0, 0.0, image, &vp).is_ok());
            assert!(matches!(
                image_to_css(f64::from(image.width), 0.0, image, &vp),
                Err(CoordError::OutsideViewport { .. })
            ));
            assert!(matches!(
                image_to_css(0.0, f64::from(image.height), image, &vp),
                Err(CoordError::OutsideViewport { .. })
            ));
            // Whole CSS pixels, rounded down, stay inside.
            let last = image_to_css(
                f64::from(image.width) - 0.5,
                f64::from(image.height) - 0.5,
                image,
                &vp,
            )
            .expect("inside");
            let t = to_point_target(last, &vp).expect("inside");
            assert!(f64::from(t.x) < vp.width && f64::from(t.y) < vp.height);
            assert!(check_point_target(t, &vp).is_ok());
        }
    }
}

#[test]
fn downscaled_images_map_by_their_actual_size() {
    let vp = viewport(2.0, 1.0);
    let half = ImageSize {
        width: 1280,
        height: 800,
    }; // the provider halved a 2560×1600 capture
    let p = image_to_css(640.0, 400.0, half, &vp).expect("inside");
    assert!(close(p, 640.0, 400.0));
}

#[test]
fn rejects_non_finite_negative_and_bad_metadata() {
    let vp = viewport(1.0, 1.0);
    let image = ImageSize {
        width: 1280,
        height: 800,
    };
    assert!(matches!(
        image_to_css(f64::NAN, 1.0, image, &vp),
        Err(CoordError::NotFinite { .. })
    ));
    assert!(matches!(
        image_to_css(1.0, f64::INFINITY, image, &vp),
        Err(CoordError::NotFinite { .. })
    ));
    assert!(matches!(
        image_to_css(-0.5, 1.0, image, &vp),
        Err(CoordError::OutsideViewport { .. })
    ));
    assert!(matches!(
        image_to_css(
            1.0,
            1.0,
            ImageSize {
                width: 0,
                height: 800
            },
            &vp
        ),
        Err(CoordError::BadMetadata(_))
    ));
    let broken = Viewport {
        device_scale_factor: 0.0,
        ..vp
    };
    assert!(matches!(
        device_to_css(1.0, 1.0, &broken),
        Err(CoordError::BadMetadata(_))
    ));
    assert!(check_point_target(PointTarget { x: 1280, y: 0 }, &vp).is_err());
    assert!(check_point_target(PointTarget { x: 1279, y: 799 }, &vp).is_ok());
}
