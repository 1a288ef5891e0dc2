// Scanner, the umbrella module: images, barcodes and text in one import, plus what needs
// both barcodes and text (`Annotation`, `ScanReport`). A program that reads only barcodes
// can depend on ScannerBarcodes alone and never link the OCR target.
@_exported public import ScannerBarcodes
@_exported public import ScannerImages
@_exported public import ScannerText
