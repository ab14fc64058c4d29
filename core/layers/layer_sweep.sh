#!/bin/sh
# Removes the layer folders of sandboxes whose corral process is gone (./layer_dirs.ts): each
# folder of SANDBOXES is named after its corral's process id first ("<pid>-<random>").
#
#   /bin/sh layer_sweep.sh SANDBOXES OWN_PID
#
# chmod first: an overlay's work folder is left mode 000.
for d in "$1"/*; do
  p=${d##*/}
  p=${p%%-*}
  case $p in *[!0-9]* | "") continue ;; esac
  if [ "$p" = "$2" ] || [ -d "/proc/$p" ]; then continue; fi
  chmod -R u+rwx -- "$d" 2>/dev/null
  rm -rf -- "$d"
done
