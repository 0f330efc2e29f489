#pragma once
// A calibration run as the run pickers offer it (Analysis and Pruning panels).

#include <QMetaType>
#include <QString>

namespace sdw::widgets {

struct RunChoice {
  QString path;
  QString source;  // "fixed", "ar", ...
  QString status;  // "complete", "incomplete"
  qint64 tokens = 0;
  qint64 sampleRows = 0;  // activation sample rows kept per input (/calibration/samples); 0: none
};

}  // namespace sdw::widgets

Q_DECLARE_METATYPE(sdw::widgets::RunChoice)
