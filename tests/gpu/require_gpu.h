#pragma once
// For the GPU suites' initTestCase: skips the whole suite, with the reason, where no
// usable GPU is present; else logs the device.

#include "gpu/device.h"

#include <QtTest>

#define SDW_REQUIRE_GPU()                                                                                  \
  do {                                                                                                     \
    const ::sdw::gpu::DeviceInfo& sdwDevice = ::sdw::gpu::deviceInfo();                                    \
    if (!sdwDevice.cudaAvailable)                                                                          \
      QSKIP(qPrintable(QStringLiteral("no usable GPU: %1").arg(QString::fromStdString(sdwDevice.reason)))); \
    qInfo("device: %s", ::sdw::gpu::describeDevice(sdwDevice).c_str());                                   \
  } while (false)
