"""The eval's second desktop app: a settings window whose "Reset all settings" opens a
confirmation dialog (a window of its own). The reset is sent to the eval's app server
(`GLOVEBOX_EVAL_SUBMIT`) only when the dialog's "Reset" is pressed. `--locked`: the settings are
managed by an administrator and cannot be reset.
"""

import argparse

import gi

gi.require_version("Gtk", "3.0")
from gi.repository import GLib, Gtk  # noqa: E402

from evalapp import submit  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--locked", action="store_true")
args = parser.parse_args()


window = Gtk.Window(title="Printer settings")
window.set_default_size(420, 260)
window.move(30, 30)
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=8)
box.set_border_width(12)
box.pack_start(Gtk.Label(label="Office printer — paper A4, duplex on, toner saver off"), False, False, 0)
status = Gtk.Label(label="Nothing sent yet.")

if args.locked:
    box.pack_start(Gtk.Label(label="These settings are managed by your administrator."), False, False, 0)
else:
    reset = Gtk.Button(label="Reset all settings")

    def open_dialog(_button):
        dialog = Gtk.Dialog(title="Reset printer settings?", transient_for=window)
        dialog.add_button("Cancel", Gtk.ResponseType.CANCEL)
        dialog.add_button("Reset", Gtk.ResponseType.OK)
        said = Gtk.Label(label="Every setting goes back to its default.")
        dialog.get_content_area().add(said)
        dialog.move(480, 30)

        def answered(d, response):
            # The dialog stays to say what happened (closing it is the person's).
            if response == Gtk.ResponseType.OK:
                done = submit({"form": "reset", "confirmed": "yes"})
                said.set_text("Settings reset. You can close this dialog." if done else "The reset failed.")
                status.set_text("Settings reset." if done else "The reset failed.")
            else:
                status.set_text("Nothing was changed.")
                d.destroy()

        dialog.connect("response", answered)
        dialog.show_all()

    reset.connect("clicked", open_dialog)
    box.pack_start(reset, False, False, 0)

box.pack_start(status, False, False, 0)
window.add(box)
window.connect("destroy", Gtk.main_quit)
window.show_all()
GLib.idle_add(lambda: print("ready", flush=True) or False)
Gtk.main()
