import ArgumentParser
import ClientCommands
import CommandSupport
import Foundation
import ImageCache
import Models
import PNG
import Plumbing
import ProductImages
import SuiteClient

struct Search: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "search",
        abstract: "Find products by title, brand, SKU or GTIN.",
        discussion: """
            A table on a terminal, else (or with --json) a page {"items": [...], \
            "nextCursor": ...} in GTIN order. Offline, the same search's last answer, else the \
            products kept from earlier runs that match.

            Example: catalog search kettle --limit 20
            """
    )

    @Argument(help: ArgumentHelp("What to look for.", valueName: "text"))
    var text: String

    @Option(name: .long, help: ArgumentHelp("Products per page (1…200).", valueName: "n"))
    var limit: Int?

    @Option(
        name: .long,
        help: ArgumentHelp("Continue after a previous page (its nextCursor).", valueName: "cursor")
    )
    var cursor: String?

    @OptionGroup var options: ClientOptions

    func validate() throws {
        guard !text.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw ValidationError("give some text to search for")
        }
        if let limit, !(1...200).contains(limit) {
            throw ValidationError("--limit must be 1…200, got \(limit)")
        }
    }

    func run() async throws {
        let query = ProductQuery(text: text, limit: limit, cursor: cursor)
        try await withClient(options) { client, output in
            let (page, _) = try await client.checkedRead { () throws(SuiteClientError) in
                try await client.products(query)
            }
            output.sayIfCached(page, what: "the search results")
            try output.printList(page)
        }
    }
}

/// How `show` and `lookup` treat the product's image.
struct ImageOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Write the product's original image (the server's bytes) to this file, atomically.",
            valueName: "file"
        )
    )
    var imageSave: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The widest drawing of the image on a terminal, in columns (0: no drawing).",
            valueName: "n"
        )
    )
    var imageWidth = 48

    func validate() throws {
        guard (0...1_000).contains(imageWidth) else {
            throw ValidationError("--image-width must be 0…1000, got \(imageWidth)")
        }
        if let imageSave, imageSave.isEmpty {
            throw ValidationError("--image-save needs a file name")
        }
    }
}

struct Show: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show one product by GTIN, with its image on a terminal.",
        discussion: """
            The GTIN in any form: 8, 12, 13 or 14 digits (spaces and hyphens ignored), a GS1 \
            element string such as (01)04006381333931(10)LOT7, or a GS1 Digital Link URL. \
            On a terminal the product's image is drawn with half blocks in 24-bit colour \
            (shades without colour when NO_COLOR is set), fitted to the terminal's width. \
            Images are kept in the suite container's image cache, shared by every suite tool; \
            offline, a kept image is shown and stderr says how old it is.

            Examples:
              catalog show 4006381333931
              catalog show 04006381333931 --image-save kettle.png --json
            """
    )

    @Argument(help: ArgumentHelp("The product's GTIN (any form).", valueName: "gtin"))
    var gtin: String

    @OptionGroup var image: ImageOptions
    @OptionGroup var options: ClientOptions

    func run() async throws {
        try await withClient(options) { client, output in
            let parsed = try ProductReference.gtin(parsing: gtin)
            try await ProductPresenter(client: client, output: output, options: options)
                .show(parsed, image: image)
        }
    }
}

struct Lookup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lookup",
        abstract: "Read a product's barcode from an image, then show the product.",
        discussion: """
            Reads EAN-13, EAN-8, UPC-A, UPC-E, ITF-14, GS1 DataBar, GS1 DataMatrix and GS1 \
            QR codes (element strings or GS1 Digital Link URLs) with the suite's `scan` tool, \
            run as a child process (found beside this program, else on PATH), takes the first \
            GTIN, and shows that product as `show` does.

            Example: catalog lookup --from-image shelf-label.png
            """
    )

    @Option(
        name: .long,
        help: ArgumentHelp("An image holding the product's barcode.", valueName: "file")
    )
    var fromImage: String

    @OptionGroup var image: ImageOptions
    @OptionGroup var options: ClientOptions

    func run() async throws {
        try await withClient(options) { client, output in
            let found = try ProductCodes.read(fromImage, timeout: client.remainingTime)
            output.note(
                "\(fromImage): \(found.format) \(found.text.debugDescription) → GTIN \(found.gtin)"
            )
            for other in found.others {
                output.warning("\(fromImage) also holds GTIN \(other); showing \(found.gtin)")
            }
            try await ProductPresenter(client: client, output: output, options: options)
                .show(found.gtin, image: image)
        }
    }
}

/// Shows a product: its details, its image drawn on a terminal, its original image saved.
struct ProductPresenter {
    let client: SuiteClient
    let output: Output
    let options: ClientOptions

    func show(_ gtin: GTIN, image: ImageOptions) async throws {
        let (fetched, _) = try await client.checkedRead { () throws(SuiteClientError) in
            try await client.product(gtin)
        }
        output.sayIfCached(fetched, what: "product \(gtin)")
        let product = fetched.value
        try output.printProduct(product)

        let draw = output.canDraw && image.imageWidth > 0
        guard draw || image.imageSave != nil else { return }
        guard let url = client.imageURL(of: product) else {
            if let file = image.imageSave {
                throw SuiteClientError(
                    .notFound,
                    "product \(gtin) has no image to save to \(file)"
                )
            }
            output.note("(product \(gtin) has no image)")
            return
        }
        let what = "the image of product \(gtin)"
        let cache = try ProductImageCache(
            client: client,
            logger: options.common.makeLogger(label: "catalog")
        )
        // Loaded so that a stop signal abandons downloads but lets a write to the shared
        // cache finish before the process exits.
        let save = image.imageSave != nil
        let loaded:
            (image: ImageResponse<PNGImage>?, imageError: SuiteClientError?, data: DataResponse?) =
                try await cache.stoppable {
                    var drawn: ImageResponse<PNGImage>?
                    var drawError: SuiteClientError?
                    if draw {
                        do throws(SuiteClientError) {
                            drawn = try await cache.image(at: url, what: what)
                        } catch {
                            drawError = error
                        }
                    }
                    // A drawing that failed for want of the image fails the same way here.
                    let bytes = save ? try await cache.data(at: url, what: what) : nil
                    return (drawn, drawError, bytes)
                }
        cache.recordUse()
        var saidStale = false
        if let response = loaded.image {
            saidStale = sayIfStale(response.isStale, response.staleReason, response.metadata, what)
            try output.writeOut("\n")
            try output.draw(response.image, columns: image.imageWidth)
        } else if let error = loaded.imageError {
            // The details are shown; a missing picture is worth a warning, not a failure
            // (unless the image was to be saved: that fails below with the same error).
            guard image.imageSave == nil, error.code != .cancelled else { throw error }
            output.warning("image not shown: \(error.message)")
        }
        if let file = image.imageSave, let response = loaded.data {
            if !saidStale {
                _ = sayIfStale(response.isStale, response.staleReason, response.metadata, what)
            }
            do {
                try FileIO.replaceFile(atPath: file, with: response.data)
            } catch {
                throw CommandError(.failure, "cannot save \(what) to \(file): \(error)")
            }
            output.note("saved \(what) (\(response.data.count) bytes) to \(file)")
        }
    }

    /// Says on stderr that an image is a stale copy served because the server could not be
    /// reached; returns whether it did.
    private func sayIfStale(
        _ isStale: Bool,
        _ reason: ImageCacheError?,
        _ metadata: HTTPCacheMetadata?,
        _ what: String
    ) -> Bool {
        guard isStale, let reason else { return false }
        let cause = (reason.cause as? SuiteClientError)?.message ?? reason.message
        var text = "offline: \(cause); showing \(what)"
        if let saved = metadata?.responseTime {
            text += " kept \(Output.age(since: saved)) ago (\(RFC3339.string(from: saved)))"
        } else {
            text += " kept from an earlier run"
        }
        output.warning(text)
        return true
    }
}
