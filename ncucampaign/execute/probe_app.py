"""The counters probe's application (`python -m ncucampaign.execute.probe_app`): one empty PTX kernel launched once
through the driver API (no torch, no compiler); under the tests' fake ncu (FAKE_NCU_FD) it reports on that pipe."""

from __future__ import annotations

import ctypes
import os
import sys

KERNEL = "ncucampaign_probe"
PTX = (f".version 7.0\n.target sm_50\n.address_size 64\n.visible .entry {KERNEL}()\n{{\n    ret;\n}}\n").encode()


def _check(driver: ctypes.CDLL, code: int, what: str) -> None:
    if code != 0:
        name = ctypes.c_char_p()
        driver.cuGetErrorName(code, ctypes.byref(name))
        raise RuntimeError(f"{what} failed: {(name.value or b'').decode() or code}")


def launch_once() -> None:
    driver = ctypes.CDLL("libcuda.so.1")
    device, context = ctypes.c_int(), ctypes.c_void_p()
    module, function = ctypes.c_void_p(), ctypes.c_void_p()
    _check(driver, driver.cuInit(0), "cuInit")
    _check(driver, driver.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
    _check(driver, driver.cuDevicePrimaryCtxRetain(ctypes.byref(context), device), "cuDevicePrimaryCtxRetain")
    _check(driver, driver.cuCtxSetCurrent(context), "cuCtxSetCurrent")
    _check(driver, driver.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(PTX)), "cuModuleLoadData")
    _check(driver, driver.cuModuleGetFunction(ctypes.byref(function), module, KERNEL.encode()), "cuModuleGetFunction")
    one = ctypes.c_uint(1)
    _check(driver, driver.cuLaunchKernel(function, one, one, one, one, one, one, 0, None, None, None), "cuLaunchKernel")
    _check(driver, driver.cuCtxSynchronize(), "cuCtxSynchronize")


def main() -> int:
    fake = os.environ.get("FAKE_NCU_FD")
    try:
        if fake:
            with os.fdopen(int(fake), "w") as pipe:
                pipe.write(f"launch {KERNEL}\n")
        else:
            launch_once()
    except (OSError, RuntimeError, ValueError) as exc:
        print(f"probe: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
