#include "widgets/qualitymodel.h"

#include "widgets/csv.h"

#include <QFont>
#include <QTextStream>

namespace sdw::widgets {

void QualityModel::setData(const QualityData& data) {
  beginResetModel();
  rows_ = data.models;
  activationSparsity_ = data.activationSparsity;
  activationThresholds_ = data.activationSparsity > 0 ? data.activationThresholds : QString();
  activationThresholdsRunId_ = data.activationThresholdsRunId;
  endResetModel();
}

const QualityModelData* QualityModel::rowAt(int r) const {
  return (r >= 0 && r < rows_.size()) ? &rows_[r] : nullptr;
}

int QualityModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int QualityModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant QualityModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const QualityModelData& r = rows_[index.row()];
  const int c = index.column();
  const auto spreadOf = [&]() -> const SeedSpread* {
    if (c == Kl) return &r.kl;
    if (c == Agreement) return &r.agreement;
    if (c == FirstDivergence) return &r.firstDivergence;
    return nullptr;
  };
  if (role == Qt::TextAlignmentRole)
    return c == Model ? QVariant() : QVariant(int(Qt::AlignRight | Qt::AlignVCenter));
  if (role == Qt::ToolTipRole) {
    if (c == Model) return r.dir;
    if (c == PplText) return tr("%1 positions scored").arg(r.tokensText);
    if (c == PplDenseGen) return tr("%1 generated positions scored").arg(r.tokensDenseGen);
    return {};
  }
  if (role == Qt::FontRole && r.dense) {
    QFont f;
    f.setItalic(true);
    return f;
  }
  if (role == StdRole) {
    const SeedSpread* s = spreadOf();
    return s ? QVariant(s->std) : QVariant();
  }
  if (role == ValueRole) {
    switch (c) {
      case Model: return r.label;
      case PplText: return r.pplText;
      case PplDenseGen: return r.pplDenseGen;
      case Seeds: return r.seeds;
      default: return spreadOf()->mean;
    }
  }
  if (role != Qt::DisplayRole) return {};
  switch (c) {
    case Model: return r.label;
    case PplText: return QString::number(r.pplText, 'f', 2);
    case PplDenseGen: return QString::number(r.pplDenseGen, 'f', 2);
    case Kl: return QStringLiteral("%1 ± %2").arg(r.kl.mean, 0, 'f', 4).arg(r.kl.std, 0, 'f', 4);
    case Agreement:
      return QStringLiteral("%1 ± %2").arg(r.agreement.mean, 0, 'f', 3).arg(r.agreement.std, 0, 'f', 3);
    case FirstDivergence:
      return QStringLiteral("%1 ± %2").arg(r.firstDivergence.mean, 0, 'f', 1).arg(r.firstDivergence.std, 0, 'f', 1);
    case Seeds: return r.seeds;
    default: return {};
  }
}

QVariant QualityModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal) return QAbstractTableModel::headerData(section, o, role);
  if (role == Qt::ToolTipRole) {
    switch (section) {
      case Model:
        if (activationSparsity_ > 0 && !activationThresholds_.isEmpty())
          return tr("Every compared model ran with run-time activation sparsity %1: each projection input keeps "
                    "the entries above the thresholds below which a share p_x of the activation samples of %2 "
                    "(run %3) lies; the dense reference stays dense")
              .arg(activationSparsityText(activationSparsity_), activationThresholds_, activationThresholdsRunId_);
        if (activationSparsity_ > 0)
          return tr("Every compared model ran with run-time activation sparsity %1 (each projection input keeps its "
                    "largest (1 - p_x) share); the dense reference stays dense")
              .arg(activationSparsityText(activationSparsity_));
        return {};
      case PplText: return tr("Perplexity on seeded windows of the held-out text, teacher-forced");
      case PplDenseGen: return tr("Perplexity of the dense model's continuations of the held-out prompts");
      case Kl: return tr("Mean KL(dense || model) in nats along the model's own trajectories; mean ± std over seeds");
      case Agreement: return tr("Share of steps where the dense and the model's argmax agree; mean ± std over seeds");
      case FirstDivergence:
        return tr("Median over prompts of the first step whose token differs from the dense argmax; mean ± std over "
                  "seeds");
      default: return {};
    }
  }
  if (role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, o, role);
  switch (section) {
    case Model:
      if (activationSparsity_ > 0 && !activationThresholds_.isEmpty())
        return tr("Model (%1, thresholds: %2)")
            .arg(activationSparsityText(activationSparsity_), runStem(activationThresholds_));
      return activationSparsity_ > 0 ? tr("Model (%1)").arg(activationSparsityText(activationSparsity_)) : tr("Model");
    case PplText: return tr("PPL (text)");
    case PplDenseGen: return tr("PPL (dense gen)");
    case Kl: return tr("KL");
    case Agreement: return tr("Agreement");
    case FirstDivergence: return tr("First divergence");
    case Seeds: return tr("Seeds");
    default: return {};
  }
}

QString QualityModel::toCsv() const {
  QString out;
  QTextStream s(&out);
  s << "model,dir,ppl_text,ppl_dense_gen,kl_mean,kl_std,agreement_mean,agreement_std,first_divergence_mean,"
       "first_divergence_std,seeds,activation_sparsity\n";
  for (const QualityModelData& r : rows_)
    s << csvField(r.label) << ',' << csvField(r.dir) << ',' << csvNumber(r.pplText) << ',' << csvNumber(r.pplDenseGen)
      << ',' << csvNumber(r.kl.mean) << ',' << csvNumber(r.kl.std) << ',' << csvNumber(r.agreement.mean) << ','
      << csvNumber(r.agreement.std) << ',' << csvNumber(r.firstDivergence.mean) << ','
      << csvNumber(r.firstDivergence.std) << ',' << r.seeds << ',' << csvNumber(r.dense ? 0.0 : activationSparsity_)
      << '\n';
  return out;
}

}  // namespace sdw::widgets
