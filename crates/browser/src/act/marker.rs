//! Where an action's input went, for a person watching (`004_…` 动作标记): built from the input
//! this tab actually dispatched during the action, never from page content. A click's point, a
//! drag's start, path and end, a wheel's point and direction, the box of a field typed into
//! (never what was typed), key chords as text. Each marker names the viewport size and scroll
//! offset its points are in: a viewer draws it only over a frame with the same, so navigation,
//! scrolling and resizing invalidate it. Nothing is ever drawn into the page.

pub use surface::{ActionMarker, MarkerKind};

use crate::tab::{Tab, lock};

/// At most this many path points are kept for a drag.
const MAX_PATH: usize = 64;

/// One input the tab sent during the current action.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Trace {
    Press(f64, f64),
    /// A pointer move with a button held (a drag's path).
    Drag(f64, f64),
    Hover(f64, f64),
    Wheel(f64, f64, f64, f64),
    Keys(String),
    Field([f64; 4]),
}

impl Tab {
    /// Notes one input of the current action (bounded).
    pub(crate) fn trace(&self, step: Trace) {
        let mut state = lock(&self.state);
        if state.trace.len() < MAX_PATH * 2 {
            state.trace.push(step);
        }
    }

    pub(crate) fn take_trace(&self) -> Vec<Trace> {
        std::mem::take(&mut lock(&self.state).trace)
    }
}

/// The marker of an action from what it sent; `at` is the viewport and scroll offset once it
/// settled (a target scrolled into view before the press, a scroll's result), which the points
/// are drawn over.
pub(crate) fn marker(trace: &[Trace], at: ([f64; 2], [f64; 2])) -> Option<ActionMarker> {
    let keys: Vec<String> = trace
        .iter()
        .filter_map(|t| {
            if let Trace::Keys(k) = t {
                Some(k.clone())
            } else {
                None
            }
        })
        .collect();
    let field = trace.iter().rev().find_map(|t| {
        if let Trace::Field(f) = t {
            Some(*f)
        } else {
            None
        }
    });
    let press = trace.iter().find_map(|t| {
        if let Trace::Press(x, y) = t {
            Some([*x, *y])
        } else {
            None
        }
    });
    let path: Vec<[f64; 2]> = trace
        .iter()
        .filter_map(|t| {
            if let Trace::Drag(x, y) = t {
                Some([*x, *y])
            } else {
                None
            }
        })
        .collect();
    let wheel = trace
        .iter()
        .filter_map(|t| {
            if let Trace::Wheel(x, y, dx, dy) = t {
                Some((*x, *y, *dx, *dy))
            } else {
                None
            }
        })
        .fold(None, |acc, (x, y, dx, dy)| {
            let (sx, sy) = acc.map_or((0.0, 0.0), |(_, _, sx, sy)| (sx, sy));
            Some((x, y, sx + dx, sy + dy))
        });
    let hover = trace.iter().rev().find_map(|t| {
        if let Trace::Hover(x, y) = t {
            Some([*x, *y])
        } else {
            None
        }
    });
    let (viewport, scroll) = at;
    let base = |kind| ActionMarker {
        kind,
        points: Vec::new(),
        field: None,
        delta: None,
        keys: keys.clone(),
        viewport,
        scroll,
    };
    if let Some(field) = field {
        return Some(ActionMarker {
            field: Some(field),
            ..base(MarkerKind::Type)
        });
    }
    if let Some((x, y, dx, dy)) = wheel {
        return Some(ActionMarker {
            points: vec![[x, y]],
            delta: Some([dx, dy]),
            ..base(MarkerKind::Scroll)
        });
    }
    if let Some(start) = press {
        let end = path.last().copied().unwrap_or(start);
        let moved = (end[0] - start[0]).hypot(end[1] - start[1]) > 3.0;
        if moved {
            let mut points = vec![start];
            let step = path.len().div_ceil(MAX_PATH).max(1);
            points.extend(path.iter().step_by(step).copied());
            if points.last() != Some(&end) {
                points.push(end);
            }
            return Some(ActionMarker {
                points,
                ..base(MarkerKind::Drag)
            });
        }
        return Some(ActionMarker {
            points: vec![start],
            ..base(MarkerKind::Click)
        });
    }
    if !keys.is_empty() {
        return Some(base(MarkerKind::Key));
    }
    hover.map(|point| ActionMarker {
        points: vec![point],
        ..base(MarkerKind::Hover)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const AT: ([f64; 2], [f64; 2]) = ([1280.0, 720.0], [0.0, 0.0]);

    #[test]
    fn a_marker_shows_what_was_sent_and_no_text() {
        let click = marker(&[Trace::Hover(10.0, 20.0), Trace::Press(10.0, 20.0)], AT).unwrap();
        assert_eq!(
            (click.kind, click.points.clone()),
            (MarkerKind::Click, vec![[10.0, 20.0]])
        );
        let drag = marker(
            &[
                Trace::Press(10.0, 10.0),
                Trace::Drag(50.0, 10.0),
                Trace::Drag(100.0, 40.0),
            ],
            AT,
        )
        .unwrap();
        assert_eq!(drag.kind, MarkerKind::Drag);
        assert_eq!(
            (drag.points.first(), drag.points.last()),
            (Some(&[10.0, 10.0]), Some(&[100.0, 40.0]))
        );
        let jitter = marker(&[Trace::Press(10.0, 10.0), Trace::Drag(11.0, 10.0)], AT).unwrap();
        assert_eq!(
            jitter.kind,
            MarkerKind::Click,
            "a press that barely moved is a click"
        );
        let scroll = marker(
            &[
                Trace::Wheel(5.0, 5.0, 0.0, 100.0),
                Trace::Wheel(5.0, 5.0, 0.0, 50.0),
            ],
            ([1280.0, 720.0], [0.0, 150.0]),
        )
        .unwrap();
        assert_eq!(
            (scroll.kind, scroll.delta, scroll.scroll),
            (MarkerKind::Scroll, Some([0.0, 150.0]), [0.0, 150.0]),
            "a marker is the settled page's"
        );
        let typed = marker(
            &[Trace::Press(3.0, 3.0), Trace::Field([1.0, 2.0, 30.0, 10.0])],
            AT,
        )
        .unwrap();
        assert_eq!(
            (typed.kind, typed.field),
            (MarkerKind::Type, Some([1.0, 2.0, 30.0, 10.0]))
        );
        assert!(
            !serde_json::to_string(&typed).unwrap().contains("text"),
            "a typed field's marker has no content"
        );
        let keys = marker(&[Trace::Keys("Control+A".into())], AT).unwrap();
        assert_eq!(
            (keys.kind, keys.keys.clone()),
            (MarkerKind::Key, vec!["Control+A".to_owned()])
        );
        assert_eq!(
            marker(&[], AT),
            None,
            "a navigation or a wait sends no input and has no marker"
        );
    }
}
