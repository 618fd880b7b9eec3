//! `Emulation` domain: viewport size and device scale.

use serde::Serialize;

use super::{Empty, command};

#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SetDeviceMetricsOverride {
    pub width: i64,
    pub height: i64,
    pub device_scale_factor: f64,
    pub mobile: bool,
}
command!(SetDeviceMetricsOverride => "Emulation.setDeviceMetricsOverride", Empty);

#[derive(Debug, Clone, Default, Serialize)]
pub struct ClearDeviceMetricsOverride {}
command!(ClearDeviceMetricsOverride => "Emulation.clearDeviceMetricsOverride", Empty);
