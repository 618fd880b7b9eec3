//! The snapshot of an action's result as changes against the observation the action was
//! checked against (its `expected_frame_id`): the lines added, removed and changed, with their
//! refs, and the line each group of changes follows. Refs are stable across observations of one
//! document (`observe.rs`), so an unchanged line — and the ref on it — means what it meant.
//!
//! The seed (004, 上下文如何保证连续): "默认返回小型 AX/DOM 差分，使用稳定 broker ID，并允许请求完整快照。
//! 缺失基准或差分乱序时返回全量". A diff is made only against the exact record the action was
//! checked against, only within one document, and only when it is smaller than the snapshot;
//! otherwise the observation carries the whole snapshot alone.

use protocol::SnapshotDiff;

/// The most cells the line matching may use (lines changed in the middle, base × current);
/// beyond it the whole snapshot is cheaper to read than to diff.
const MAX_CELLS: usize = 400_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Keep,
    Remove,
    Add,
}

/// The changes from `base` to `current` (two snapshots as `observe` writes them), when that is
/// smaller than `current`; `None` when the whole snapshot is as small or the change too large.
pub(crate) fn snapshot_diff(
    base_frame: &protocol::FrameId,
    base: &str,
    current: &str,
) -> Option<SnapshotDiff> {
    let old: Vec<&str> = base.lines().collect();
    let new: Vec<&str> = current.lines().collect();
    let prefix = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let (a, b) = (
        &old[prefix..old.len() - suffix],
        &new[prefix..new.len() - suffix],
    );
    if a.len().saturating_mul(b.len()) > MAX_CELLS {
        return None;
    }
    let mut ops = vec![Op::Keep; prefix];
    ops.extend(edit_script(a, b));
    ops.extend(std::iter::repeat_n(Op::Keep, suffix));

    let (mut added, mut removed, mut changed) = (0u32, 0u32, 0u32);
    let mut body = String::new();
    let (mut i, mut j) = (0usize, 0usize);
    let mut k = 0;
    while k < ops.len() {
        if ops[k] == Op::Keep {
            i += 1;
            j += 1;
            k += 1;
            continue;
        }
        // One group of changes: where it is, then its lines.
        let mut gone = Vec::new();
        let mut came = Vec::new();
        while k < ops.len() && ops[k] != Op::Keep {
            match ops[k] {
                Op::Remove => {
                    gone.push(old[i]);
                    i += 1;
                }
                Op::Add => {
                    came.push(new[j]);
                    j += 1;
                }
                Op::Keep => unreachable!("the loop stops at a kept line"),
            }
            k += 1;
        }
        match j.checked_sub(came.len() + 1).map(|at| new[at]) {
            Some(before) => {
                body.push_str("@@ after: ");
                body.push_str(before.trim_start());
                body.push('\n');
            }
            None => body.push_str("@@ at the top\n"),
        }
        // A line whose ref stays but whose text changed is one change, not a removal and an add.
        let refs_came: Vec<Option<&str>> = came.iter().map(|l| line_ref(l)).collect();
        let mut replaced = vec![false; came.len()];
        for line in &gone {
            let r = line_ref(line);
            if let Some(at) = r.and_then(|r| refs_came.iter().position(|c| *c == Some(r))) {
                replaced[at] = true;
                continue;
            }
            removed += 1;
            body.push_str("- ");
            body.push_str(line);
            body.push('\n');
        }
        for (line, replaced) in came.iter().zip(&replaced) {
            if *replaced {
                changed += 1;
                body.push_str("~ ");
            } else {
                added += 1;
                body.push_str("+ ");
            }
            body.push_str(line);
            body.push('\n');
        }
    }
    let unchanged = new.len() as u32 - added - changed;
    let text = if added + removed + changed == 0 {
        format!(
            "no line changed since {} ({unchanged} lines as they were)\n",
            base_frame.as_str()
        )
    } else {
        format!(
            "changes since {}: {added} added (+), {removed} removed (-), {changed} changed (~); the other {unchanged} lines and their refs are as they were\n{body}",
            base_frame.as_str()
        )
    };
    (text.len() < current.len())
        .then(|| SnapshotDiff::new(base_frame.clone(), text, added, removed, changed))
}

/// The ref a snapshot line carries (`[e12 …]`), if any.
fn line_ref(line: &str) -> Option<&str> {
    let at = line.find(" [e")?;
    let r = line[at + 2..].split([' ', ']']).next()?;
    (r.len() > 1 && r[1..].bytes().all(|b| b.is_ascii_digit())).then_some(r)
}

/// The shortest edit script from `a` to `b` by longest common subsequence (both are small: the
/// changed middle of two snapshots).
fn edit_script(a: &[&str], b: &[&str]) -> Vec<Op> {
    let (n, m) = (a.len(), b.len());
    // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
    let mut lcs = vec![0u32; (n + 1) * (m + 1)];
    let at = |i: usize, j: usize| i * (m + 1) + j;
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[at(i, j)] = if a[i] == b[j] {
                lcs[at(i + 1, j + 1)] + 1
            } else {
                lcs[at(i + 1, j)].max(lcs[at(i, j + 1)])
            };
        }
    }
    let mut ops = Vec::with_capacity(n + m);
    let (mut i, mut j) = (0, 0);
    while i < n && j < m {
        if a[i] == b[j] {
            ops.push(Op::Keep);
            i += 1;
            j += 1;
        } else if lcs[at(i + 1, j)] >= lcs[at(i, j + 1)] {
            ops.push(Op::Remove);
            i += 1;
        } else {
            ops.push(Op::Add);
            j += 1;
        }
    }
    ops.extend(std::iter::repeat_n(Op::Remove, n - i));
    ops.extend(std::iter::repeat_n(Op::Add, m - j));
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame() -> protocol::FrameId {
        protocol::FrameId::new("frame_0000000000000001").unwrap()
    }

    #[test]
    fn rows_added_removed_and_changed() {
        let mut base = String::from("main\n heading \"Inbox\" [level=1]\n");
        for i in 0..30 {
            base.push_str(&format!(" row \"mail {i}\" [e{}]\n", i + 1));
        }
        base.push_str(" textbox \"Search\" [e40]\n");
        let current = base.replace(" row \"mail 3\" [e4]\n", "").replace(
            " row \"mail 10\" [e11]\n",
            " row \"mail 10\" [e11 selected]\n  \"opened\"\n",
        ) + " row \"mail 30\" [e41]\n";
        let diff = snapshot_diff(&frame(), &base, &current).expect("smaller than the snapshot");
        assert_eq!(
            (diff.added(), diff.removed(), diff.changed()),
            (2, 1, 1),
            "{}",
            diff.text()
        );
        let text = diff.text();
        assert!(text.contains("@@ after: row \"mail 2\" [e3]\n- "), "{text}");
        assert!(text.contains("-  row \"mail 3\" [e4]\n"), "{text}");
        assert!(
            text.contains("~  row \"mail 10\" [e11 selected]\n+   \"opened\"\n"),
            "{text}"
        );
        assert!(
            text.contains("@@ after: textbox \"Search\" [e40]\n+  row \"mail 30\" [e41]\n"),
            "{text}"
        );
        assert!(text.len() < current.len());
    }

    #[test]
    fn nothing_changed_and_everything_changed() {
        let page: String = (0..20)
            .map(|i| format!(" button \"b{i}\" [e{i}]\n"))
            .collect();
        assert!(
            snapshot_diff(&frame(), &page, &page)
                .unwrap()
                .text()
                .starts_with("no line changed")
        );
        let other: String = (0..20)
            .map(|i| format!(" link \"l{i}\" [e{}]\n", i + 100))
            .collect();
        assert!(
            snapshot_diff(&frame(), &page, &other).is_none(),
            "a diff as big as the page is not sent"
        );
        assert!(snapshot_diff(&frame(), "", "").is_none());
    }
}
