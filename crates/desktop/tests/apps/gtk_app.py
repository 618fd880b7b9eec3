"""Glovebox's GTK test app: an entry, buttons, a checkbox and a drawing area, each logging every
event it receives as one JSON line to the file named by GLOVEBOX_APP_LOG (the tests read it to
prove what the app itself saw). Run with /usr/bin/python3, which sees Debian's `gi`.

Arguments: --title TITLE (window title), --x X --y Y (position), --grid N (instead of the
form: N small checkboxes in rows of 40, all showing: a window of about N accessible nodes),
--confirm (instead of the form: a confirmation whose default button, what Enter activates from
its entry, is "Delete all"), --choices (below the form: a combo box "Color" and a slider
"Volume"), --dialog (below the form: a button "Open dialog" that opens a dialog window titled
"Confirm" with OK and Cancel).
"""

import argparse
import json
import os
import sys
import time

import gi

gi.require_version("Gtk", "3.0")
gi.require_version("Gdk", "3.0")
from gi.repository import Gdk, GLib, Gtk  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--title", default="Glovebox test app")
parser.add_argument("--x", type=int, default=40)
parser.add_argument("--y", type=int, default=40)
parser.add_argument("--grid", type=int, default=0)
parser.add_argument("--confirm", action="store_true")
parser.add_argument("--choices", action="store_true")
parser.add_argument("--dialog", action="store_true")
args = parser.parse_args()

log_path = os.environ.get("GLOVEBOX_APP_LOG")
log_file = open(log_path, "a", buffering=1) if log_path else sys.stdout


def log(event, **fields):
    fields.update(event=event, window=args.title, t=time.time())
    log_file.write(json.dumps(fields) + "\n")


window = Gtk.Window(title=args.title)
window.set_default_size(420, 360)
window.move(args.x, args.y)
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=6)
box.set_border_width(8)

label = Gtk.Label(label="Your name")
entry = Gtk.Entry()
entry.get_accessible().set_name("Name")
label.set_mnemonic_widget(entry)
submit = Gtk.Button(label="Submit")
check = Gtk.CheckButton(label="Subscribe")
mover = Gtk.Button(label="Move soon")


def move_soon(_button):
    def later():
        x, y = window.get_position()
        window.move(x + 60, y + 40)
        log("moved")
        return False

    GLib.timeout_add(300, later)


mover.connect("clicked", move_soon)
status = Gtk.Label(label="Nothing submitted")
status.get_accessible().set_name("Status")
canvas = Gtk.DrawingArea()
canvas.set_size_request(380, 150)
canvas.get_accessible().set_name("Canvas")
canvas.add_events(
    Gdk.EventMask.BUTTON_PRESS_MASK
    | Gdk.EventMask.BUTTON_RELEASE_MASK
    | Gdk.EventMask.POINTER_MOTION_MASK
)
strokes = []


def on_draw(widget, cr):
    cr.set_source_rgb(1, 1, 1)
    cr.paint()
    cr.set_source_rgb(0.1, 0.2, 0.8)
    cr.set_line_width(3)
    for stroke in strokes:
        if len(stroke) > 1:
            cr.move_to(*stroke[0])
            for p in stroke[1:]:
                cr.line_to(*p)
            cr.stroke()
    return False


def on_press(widget, event):
    strokes.append([(event.x, event.y)])
    log("canvas_press", x=event.x, y=event.y, button=event.button)


def on_motion(widget, event):
    if event.state & Gdk.ModifierType.BUTTON1_MASK and strokes:
        strokes[-1].append((event.x, event.y))
        log("canvas_motion", x=event.x, y=event.y)
        widget.queue_draw()


def on_release(widget, event):
    log("canvas_release", x=event.x, y=event.y, button=event.button)
    widget.queue_draw()


def on_submit(_button):
    status.set_text("Submitted " + entry.get_text())
    log("submit", text=entry.get_text(), subscribed=check.get_active())


def on_key(widget, event):
    name = Gdk.keyval_name(event.keyval)
    log("key_press" if event.type == Gdk.EventType.KEY_PRESS else "key_release", key=name)
    return False


canvas.connect("draw", on_draw)
canvas.connect("button-press-event", on_press)
canvas.connect("motion-notify-event", on_motion)
canvas.connect("button-release-event", on_release)
submit.connect("clicked", on_submit)
check.connect("toggled", lambda b: log("toggle", active=b.get_active()))
entry.connect("changed", lambda e: log("changed", length=len(e.get_text())))
entry.connect("activate", lambda e: log("activate", text=e.get_text()))
window.connect("key-press-event", on_key)
window.connect("key-release-event", on_key)
window.connect("focus-in-event", lambda *_: log("focus_in") or False)
window.connect("focus-out-event", lambda *_: log("focus_out") or False)
window.connect("destroy", Gtk.main_quit)

if args.confirm:
    question = Gtk.Label(label="Delete all files? Type a note, then press Enter.")
    note = Gtk.Entry()
    note.get_accessible().set_name("Note")
    note.set_activates_default(True)
    cancel = Gtk.Button(label="Cancel")
    delete = Gtk.Button(label="Delete all")
    delete.set_can_default(True)
    cancel.connect("clicked", lambda _b: log("cancel"))
    delete.connect("clicked", lambda _b: log("delete"))
    for w in (question, note, cancel, delete):
        box.pack_start(w, False, False, 0)
    window.add(box)
    delete.grab_default()
elif args.grid:
    # A big window: many small controls, every one showing (read in full by the tree walk).
    grid = Gtk.Grid()
    for i in range(args.grid):
        cell = Gtk.CheckButton()
        cell.get_accessible().set_name("Cell %d" % i)
        cell.connect("toggled", lambda b, i=i: log("toggle", cell=i, active=b.get_active()))
        grid.attach(cell, i % 40, i // 40, 1, 1)
    window.set_default_size(1100, 700)
    window.add(grid)
else:
    for w in (label, entry, submit, check, mover, status, canvas):
        box.pack_start(w, False, False, 0)
    if args.choices:
        color = Gtk.ComboBoxText()
        for c in ("Red", "Green", "Blue"):
            color.append_text(c)
        color.set_active(0)
        color.get_accessible().set_name("Color")
        color.connect("changed", lambda c: log("color", value=c.get_active_text()))
        volume = Gtk.Scale.new_with_range(Gtk.Orientation.HORIZONTAL, 0, 100, 1)
        volume.get_accessible().set_name("Volume")
        volume.connect("value-changed", lambda v: log("volume", value=v.get_value()))
        box.pack_start(color, False, False, 0)
        box.pack_start(volume, False, False, 0)
    if args.dialog:

        def open_dialog(_button):
            dialog = Gtk.Dialog(title="Confirm", transient_for=window)
            dialog.add_button("Cancel", Gtk.ResponseType.CANCEL)
            dialog.add_button("OK", Gtk.ResponseType.OK)
            dialog.get_content_area().add(Gtk.Label(label="Apply the change?"))
            dialog.move(args.x + 460, args.y)

            def answered(d, response):
                log("dialog", response="ok" if response == Gtk.ResponseType.OK else "cancel")
                d.destroy()

            dialog.connect("response", answered)
            dialog.show_all()
            log("dialog_opened")

        opener = Gtk.Button(label="Open dialog")
        opener.connect("clicked", open_dialog)
        box.pack_start(opener, False, False, 0)
    window.add(box)
window.show_all()
GLib.idle_add(lambda: log("ready") or False)
Gtk.main()
