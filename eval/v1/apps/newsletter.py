"""The eval's desktop app: a GTK newsletter sign-up window (an entry, a combo box, a checkbox, a
button). What the person's "Sign up" sends goes to the eval's app server (`GLOVEBOX_EVAL_SUBMIT`),
which is what the harness judges. `--closed`: sign-ups are closed and the form is not there.
Run with /usr/bin/python3, which sees Debian's `gi`.
"""

import argparse

import gi

gi.require_version("Gtk", "3.0")
from gi.repository import GLib, Gtk  # noqa: E402

from evalapp import submit  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--closed", action="store_true")
args = parser.parse_args()


window = Gtk.Window(title="Newsletter sign-up")
window.set_default_size(460, 320)
window.move(30, 30)
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=8)
box.set_border_width(12)
box.pack_start(Gtk.Label(label="The Harbour Gazette — weekly newsletter"), False, False, 0)
status = Gtk.Label(label="Nothing sent yet.")

if args.closed:
    box.pack_start(Gtk.Label(label="Sign-ups are closed while we move to a new mail provider."), False, False, 0)
else:
    name_label = Gtk.Label(label="Email address")
    email = Gtk.Entry()
    email.get_accessible().set_name("Email address")
    name_label.set_mnemonic_widget(email)
    topic = Gtk.ComboBoxText()
    for t in ("Local news", "Sport", "Culture"):
        topic.append_text(t)
    topic.get_accessible().set_name("Topic")
    weekly = Gtk.CheckButton(label="Also send the weekend edition")
    button = Gtk.Button(label="Sign up")

    def on_sign_up(_button):
        text = email.get_text().strip()
        chosen = topic.get_active_text()
        if "@" not in text or not chosen:
            status.set_text("Enter an email address and choose a topic.")
            return
        fields = {"form": "newsletter", "email": text, "topic": chosen, "weekend": "yes" if weekly.get_active() else "no"}
        status.set_text("Signed up " + text + " for " + chosen + "." if submit(fields) else "The sign-up failed.")

    button.connect("clicked", on_sign_up)
    for widget in (name_label, email, Gtk.Label(label="Topic"), topic, weekly, button):
        box.pack_start(widget, False, False, 0)

box.pack_start(status, False, False, 0)
window.add(box)
window.connect("destroy", Gtk.main_quit)
window.show_all()
GLib.idle_add(lambda: print("ready", flush=True) or False)
Gtk.main()
