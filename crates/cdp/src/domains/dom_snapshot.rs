//! `DOMSnapshot` domain: the whole DOM of a page's same-process frames with layout, styles and clickability.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{DeserializeSeed, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use super::command;

/// Where entry `index` lies in a flat buffer whose entries end at `ends`.
fn span(ends: &[usize], index: usize) -> Option<std::ops::Range<usize>> {
    let end = *ends.get(index)?;
    let start = index.checked_sub(1).map_or(0, |i| ends[i]);
    Some(start..end)
}

/// One short array per entry (a node's attributes, a layout object's bounds or styles), all in
/// one vector: a page of ten thousand nodes is a few allocations rather than tens of thousands.
#[derive(Debug, Clone)]
pub struct Ragged<T> {
    values: Vec<T>,
    /// Where each entry's values end in `values`.
    ends: Vec<usize>,
}

impl<T> Default for Ragged<T> {
    fn default() -> Self {
        Ragged {
            values: Vec::new(),
            ends: Vec::new(),
        }
    }
}

impl<T> Ragged<T> {
    /// Entry `index`'s values.
    pub fn get(&self, index: usize) -> Option<&[T]> {
        self.values.get(span(&self.ends, index)?)
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Ragged<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Outer<T>(PhantomData<T>);
        struct Inner<'v, T>(&'v mut Vec<T>);
        impl<'de, T: Deserialize<'de>> DeserializeSeed<'de> for Inner<'_, T> {
            type Value = ();
            fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
                d.deserialize_seq(self)
            }
        }
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Inner<'_, T> {
            type Value = ();
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
                while let Some(value) = seq.next_element()? {
                    self.0.push(value);
                }
                Ok(())
            }
        }
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Outer<T> {
            type Value = Ragged<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of arrays")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Ragged<T>, A::Error> {
                let mut out = Ragged::default();
                while seq.next_element_seed(Inner(&mut out.values))?.is_some() {
                    out.ends.push(out.values.len());
                }
                Ok(out)
            }
        }
        deserializer.deserialize_seq(Outer(PhantomData))
    }
}

/// The reply's string table in one buffer (a big page has thousands of strings).
#[derive(Debug, Clone, Default)]
pub struct Strings {
    text: String,
    /// Where each string ends in `text`.
    ends: Vec<usize>,
}

impl Strings {
    pub fn get(&self, index: usize) -> Option<&str> {
        self.text.get(span(&self.ends, index)?)
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
}

impl<'de> Deserialize<'de> for Strings {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Outer;
        struct One<'v>(&'v mut String);
        impl<'de> DeserializeSeed<'de> for One<'_> {
            type Value = ();
            fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
                d.deserialize_str(self)
            }
        }
        impl Visitor<'_> for One<'_> {
            type Value = ();
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<(), E> {
                self.0.push_str(v);
                Ok(())
            }
        }
        impl<'de> Visitor<'de> for Outer {
            type Value = Strings;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of strings")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Strings, A::Error> {
                let mut out = Strings::default();
                while seq.next_element_seed(One(&mut out.text))?.is_some() {
                    out.ends.push(out.text.len());
                }
                Ok(out)
            }
        }
        deserializer.deserialize_seq(Outer)
    }
}

#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CaptureSnapshot {
    /// Computed style properties to return per layout node, in this order.
    pub computed_styles: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include_dom_rects: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include_paint_order: Option<bool>,
}

/// Indexes into the reply's string table, per node that has the value.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct RareStringData {
    pub index: Vec<usize>,
    pub value: Vec<i64>,
}

/// The node indexes for which the value is true.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct RareBooleanData {
    pub index: Vec<usize>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct RareIntegerData {
    pub index: Vec<usize>,
    pub value: Vec<i64>,
}

/// Parallel arrays, one entry per DOM node; strings are indexes into the reply's `strings`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeTreeSnapshot {
    pub parent_index: Vec<i64>,
    pub node_type: Vec<i64>,
    pub shadow_root_type: RareStringData,
    pub node_name: Vec<i64>,
    pub node_value: Vec<i64>,
    pub backend_node_id: Vec<i64>,
    /// Per node: `[name, value, name, value, …]` string indexes.
    pub attributes: Ragged<i64>,
    pub text_value: RareStringData,
    pub input_value: RareStringData,
    pub input_checked: RareBooleanData,
    pub option_selected: RareBooleanData,
    pub content_document_index: RareIntegerData,
    pub pseudo_type: RareStringData,
    /// Nodes that respond to clicks: click listeners attached from script, and links.
    pub is_clickable: RareBooleanData,
    pub current_source_url: RareStringData,
}

/// Parallel arrays, one entry per layout object.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LayoutTreeSnapshot {
    pub node_index: Vec<usize>,
    /// Per layout object: the requested computed styles as string indexes, in request order.
    pub styles: Ragged<i64>,
    /// Per layout object: `[x, y, width, height]` in the document's coordinates.
    pub bounds: Ragged<f64>,
    pub text: Vec<i64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DocumentSnapshot {
    pub document_url: i64,
    /// The document's base URL (`<base href>` applied), a string index.
    #[serde(rename = "baseURL")]
    pub base_url: Option<i64>,
    pub title: i64,
    pub frame_id: i64,
    pub nodes: NodeTreeSnapshot,
    pub layout: LayoutTreeSnapshot,
    pub scroll_offset_x: Option<f64>,
    pub scroll_offset_y: Option<f64>,
    pub content_width: Option<f64>,
    pub content_height: Option<f64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct CaptureSnapshotReply {
    pub documents: Vec<DocumentSnapshot>,
    pub strings: Strings,
}

impl CaptureSnapshotReply {
    /// The string at `index`, or "" for -1 and out-of-range indexes.
    pub fn string(&self, index: i64) -> &str {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.strings.get(i))
            .unwrap_or("")
    }
}
command!(CaptureSnapshot => "DOMSnapshot.captureSnapshot", CaptureSnapshotReply);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_arrays_and_strings_read_as_the_nested_ones_they_replace() {
        let reply: CaptureSnapshotReply = serde_json::from_str(
            r#"{"documents":[{"documentURL":0,"title":1,"frameId":1,
                "nodes":{"parentIndex":[-1,0,1],"attributes":[[],[2,3,4,5],[]]},
                "layout":{"nodeIndex":[1,2],"styles":[[6],[]],"bounds":[[1.5,2,3,4],[0,0,0,0]],"text":[-1,-1]},
                "textBoxes":{"layoutIndex":[],"bounds":[],"start":[],"length":[]}}],
              "strings":["http://a.test/","","class","a \"quoted\" \u00e9 word","id","x\ny","block"]}"#,
        )
        .unwrap();
        assert_eq!(reply.strings.len(), 7);
        assert_eq!(reply.string(3), "a \"quoted\" é word");
        assert_eq!(reply.string(5), "x\ny");
        assert_eq!(reply.string(1), "");
        assert_eq!(reply.string(-1), "");
        assert_eq!(reply.string(7), "");
        let doc = &reply.documents[0];
        assert_eq!(doc.nodes.attributes.len(), 3);
        assert_eq!(doc.nodes.attributes.get(0), Some(&[][..]));
        assert_eq!(doc.nodes.attributes.get(1), Some(&[2, 3, 4, 5][..]));
        assert_eq!(doc.nodes.attributes.get(2), Some(&[][..]));
        assert_eq!(doc.nodes.attributes.get(3), None);
        assert_eq!(doc.layout.styles.get(0), Some(&[6][..]));
        assert_eq!(doc.layout.bounds.get(0), Some(&[1.5, 2.0, 3.0, 4.0][..]));
        assert!(serde_json::from_str::<Ragged<i64>>(r#"[[1],"x"]"#).is_err());
        assert!(serde_json::from_str::<Strings>(r#"["a",1]"#).is_err());
    }
}
